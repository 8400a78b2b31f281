package dockertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/poll"
)

// alert is one entry of Prometheus's /api/v1/alerts.
type alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"` // pending or firing
	ActiveAt time.Time         `json:"activeAt"`
	Value    string            `json:"value"`
}

func (a alert) String() string {
	var labels []string
	for k, v := range a.Labels {
		if k != "alertname" && k != "severity" {
			labels = append(labels, k+"="+v)
		}
	}
	slices.Sort(labels)
	return fmt.Sprintf("%s %s {%s} value %s", a.Labels["alertname"], a.State, strings.Join(labels, " "), a.Value)
}

// alerts returns what the suite's Prometheus reports as pending or firing.
func (s *stack) alerts() ([]alert, error) {
	resp, err := http.Get(s.prom + "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v1/alerts: status %d", resp.StatusCode)
	}
	var body struct {
		Data struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET /api/v1/alerts: %w", err)
	}
	return body.Data.Alerts, nil
}

// awaitAlert waits until Prometheus (the monitoring profile, scraping and evaluating every 2 s)
// reports the alert name pending or firing, with every label of match ("instance=10.0.0.2:8090"),
// and returns it: a fault must raise the alert that names it, on the live stack. Pending is
// enough: it starts at the first evaluation the condition holds, while `for:` (minutes, for
// production) decides only when it fires.
func (s *stack) awaitAlert(t *testing.T, name string, within time.Duration, match ...string) alert {
	t.Helper()
	var found alert
	poll.Check(t, within, func() error {
		active, err := s.alerts()
		if err != nil {
			return err
		}
		for _, a := range active {
			if a.Labels["alertname"] == name && a.matches(match) {
				found = a
				return nil
			}
		}
		return fmt.Errorf("Prometheus to report alert %s %v pending or firing (active: %v)", name, match, active)
	})
	t.Logf("prometheus: %v, active since %s", found, found.ActiveAt.Format("15:04:05.000"))
	return found
}

// matches reports whether the alert has every label=value of match.
func (a alert) matches(match []string) bool {
	for _, m := range match {
		k, v, _ := strings.Cut(m, "=")
		if a.Labels[k] != v {
			return false
		}
	}
	return true
}

// instance is a node's Prometheus instance label: its address on the default network.
func (n node) instance() string { return "instance=" + strings.TrimPrefix(n.url, "http://") }

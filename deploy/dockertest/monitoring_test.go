package dockertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
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
	return s.awaitAlertState(t, name, "", within, match...)
}

// awaitAlertFiring is awaitAlert for an alert that must outlast its `for:`: pending is not
// enough, the condition has to hold until Prometheus reports it firing.
func (s *stack) awaitAlertFiring(t *testing.T, name string, within time.Duration, match ...string) alert {
	t.Helper()
	return s.awaitAlertState(t, name, "firing", within, match...)
}

// awaitAlertState waits for the alert name with every label of match, in state ("": either).
func (s *stack) awaitAlertState(t *testing.T, name, state string, within time.Duration, match ...string) alert {
	t.Helper()
	var found alert
	poll.Check(t, within, func() error {
		active, err := s.alerts()
		if err != nil {
			return err
		}
		for _, a := range active {
			if a.Labels["alertname"] == name && a.matches(match) && (state == "" || a.State == state) {
				found = a
				return nil
			}
		}
		want := state
		if want == "" {
			want = "pending or firing"
		}
		return fmt.Errorf("Prometheus to report alert %s %v %s (active: %v)", name, match, want, active)
	})
	t.Logf("prometheus: %v, active since %s", found, found.ActiveAt.Format("15:04:05.000"))
	return found
}

// awaitQuery waits until the instant query expr returns at least one sample (a comparison that
// holds, such as `job:likes_replicas_up:max1h{job="fanout-svc"} >= 4`).
func (s *stack) awaitQuery(t *testing.T, expr string, within time.Duration) {
	t.Helper()
	poll.Check(t, within, func() error {
		resp, err := http.Get(s.prom + "/api/v1/query?query=" + url.QueryEscape(expr))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /api/v1/query %s: status %d", expr, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return fmt.Errorf("GET /api/v1/query %s: %w", expr, err)
		}
		if len(body.Data.Result) == 0 {
			return fmt.Errorf("Prometheus to answer %s with a sample", expr)
		}
		return nil
	})
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

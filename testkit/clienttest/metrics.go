package clienttest

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/likes/likes/testkit/apicheck"
)

// metricsClient reads /metrics and haproxy's statistics; a reply from a service a test registered
// (apicheck.Serve) must be as its document says.
var metricsClient = &http.Client{Timeout: 10 * time.Second, Transport: apicheck.Wrap(nil)}

// ScrapeMetric reads one unlabelled sample from baseURL/metrics.
func ScrapeMetric(baseURL, name string) (float64, error) {
	resp, err := metricsClient.Get(baseURL + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

// HAProxyServer is one server row of haproxy's CSV statistics.
type HAProxyServer struct {
	Name    string // svname: fanout1, writer2, ...
	Status  string // UP, DOWN, MAINT (resolution), ...
	Current int    // scur: sessions open now (streams, for the fanout backend)
	Address string // addr: the server's address, when haproxy has resolved one
}

// HAProxyServers reads the servers of backend from haproxy's stats page (statsURL is the page,
// e.g. http://127.0.0.1:8404/stats; ";csv" is appended).
func HAProxyServers(statsURL, backend string) ([]HAProxyServer, error) {
	resp, err := metricsClient.Get(statsURL + ";csv")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := csv.NewReader(resp.Body)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("haproxy stats: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("haproxy stats: empty")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[strings.TrimPrefix(name, "# ")] = i
	}
	field := func(row []string, name string) string {
		if i, ok := col[name]; ok && i < len(row) {
			return row[i]
		}
		return ""
	}
	var out []HAProxyServer
	for _, row := range rows[1:] {
		if len(row) < 2 || row[0] != backend || row[1] == "BACKEND" || row[1] == "FRONTEND" {
			continue
		}
		cur, _ := strconv.Atoi(field(row, "scur"))
		out = append(out, HAProxyServer{Name: row[1], Status: field(row, "status"), Current: cur, Address: field(row, "addr")})
	}
	return out, nil
}

// HAProxyServersUp counts the servers of backend that haproxy reports UP; -1 when the page
// cannot be read.
func HAProxyServersUp(statsURL, backend string) int {
	servers, err := HAProxyServers(statsURL, backend)
	if err != nil {
		return -1
	}
	up := 0
	for _, s := range servers {
		if s.Status == "UP" {
			up++
		}
	}
	return up
}

package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestRequestMetricsMethodsAreClosed: requests with methods a client makes up are counted as
// "other", so that however many distinct methods arrive, /metrics holds the same lines.
func TestRequestMetricsMethodsAreClosed(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewRequestMetrics(reg, "t")
	r := chi.NewRouter()
	r.Use(m.Middleware)
	r.Get("/thing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(r)
	defer srv.Close()

	// Every method of the closed set, and one made up, so that "other" is there already.
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "BREW"} {
		doMethod(t, srv.URL+"/thing", method)
		doMethod(t, srv.URL+"/nowhere", method)
	}
	metricLines(t, srv.URL) // the scrape itself is a series
	before := metricLines(t, srv.URL)
	for i := range 200 {
		method := "X" + strconv.Itoa(i) + strings.Repeat("A", 1000)
		doMethod(t, srv.URL+"/thing", method)
		doMethod(t, srv.URL+"/nowhere", method)
	}
	if after := metricLines(t, srv.URL); after != before {
		t.Errorf("/metrics has %d lines after 200 made-up methods; want %d, as before them", after, before)
	}
}

func doMethod(t *testing.T, url, method string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// metricLines counts the lines of /metrics that are samples, not comments.
func metricLines(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

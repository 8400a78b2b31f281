package nodemetrics

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestScrapeRealRegistry scrapes a real process collector. The process's CPU time is read from
// /proc in clock ticks (10 ms), so a young test process may report 0: the test first works until
// the collector itself reports some CPU, then checks that the scraped figure lies between two
// direct readings of the same collector taken before and after the scrape. CPU time only grows,
// so the bracket holds on any machine, and a value parsed from the wrong series or scaled wrongly
// falls outside it.
func TestScrapeRealRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: Viewers, Help: "viewers"})
	g.Set(1234)
	reg.MustRegister(g)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	burnUntilCPU(t, reg)
	before := gatheredCPU(t, reg)
	s, err := Scrape(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	after := gatheredCPU(t, reg)
	if s.Viewers != 1234 {
		t.Errorf("viewers = %v; want 1234", s.Viewers)
	}
	if s.RSSBytes < 1<<20 {
		t.Errorf("rss = %v; want this test process's resident memory (> 1 MiB)", s.RSSBytes)
	}
	if s.CPUSeconds < before || s.CPUSeconds > after {
		t.Errorf("cpu = %v; want within the collector's own readings [%v, %v]", s.CPUSeconds, before, after)
	}
}

// burnUntilCPU does busy work until reg's process collector reports a CPU time above zero, so
// the scraped figure cannot be a default zero. It needs one clock tick of CPU; the deadline only
// guards against a collector that never reports.
func burnUntilCPU(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	x := uint64(1)
	for gatheredCPU(t, reg) <= 0 {
		if time.Now().After(deadline) {
			t.Fatal("process collector reports 0 CPU seconds after 30 s of busy work")
		}
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 { // keeps the loop from being optimised away
		t.Log(x)
	}
}

// gatheredCPU reads CPUSeconds from reg directly, without HTTP or text parsing.
func gatheredCPU(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == CPUSeconds {
			if v, ok := sum(mf); ok {
				return v
			}
		}
	}
	t.Fatalf("registry has no %s", CPUSeconds)
	return 0
}

func TestScrapeMissingMetric(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n"))
	}))
	defer srv.Close()
	if _, err := Scrape(context.Background(), srv.Client(), srv.URL); err == nil {
		t.Fatal("err = nil for metrics without resident memory; want an error")
	}
}

func TestCPUPercent(t *testing.T) {
	t0 := time.Now()
	a := Sample{At: t0, CPUSeconds: 10}
	b := Sample{At: t0.Add(2 * time.Second), CPUSeconds: 11.5}
	if got := CPUPercent(a, b); math.Abs(got-75) > 1e-9 {
		t.Fatalf("CPUPercent = %v; want 75", got)
	}
}

func TestScrapeWatchingReports(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	s, err := Scrape(context.Background(), srv.Client(), srv.URL)
	if err != nil || !math.IsNaN(s.WatchingReports) {
		t.Fatalf("without the counter: %v, %v; want NaN", s.WatchingReports, err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: WatchingReports, Help: "reports"})
	c.Add(42)
	reg.MustRegister(c)
	if s, err = Scrape(context.Background(), srv.Client(), srv.URL); err != nil || s.WatchingReports != 42 {
		t.Fatalf("with the counter at 42: %v, %v", s.WatchingReports, err)
	}
}

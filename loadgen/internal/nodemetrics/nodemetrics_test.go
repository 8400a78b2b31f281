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

func TestScrapeRealRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: Viewers, Help: "viewers"})
	g.Set(1234)
	reg.MustRegister(g)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	s, err := Scrape(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if s.Viewers != 1234 {
		t.Errorf("viewers = %v; want 1234", s.Viewers)
	}
	if s.RSSBytes < 1<<20 {
		t.Errorf("rss = %v; want this test process's resident memory (> 1 MiB)", s.RSSBytes)
	}
	if s.CPUSeconds <= 0 {
		t.Errorf("cpu = %v; want > 0", s.CPUSeconds)
	}
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

package nodemetrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names read from a node.
const (
	CPUSeconds = "process_cpu_seconds_total"
	RSSBytes   = "process_resident_memory_bytes"
	Viewers    = "likes_fanout_viewers"
	// WatchingReports counts the (post, interval) numbers a node added to Redis's watching
	// totals: what the watching feature asks of Redis.
	WatchingReports = "likes_fanout_watching_reports_total"
	// DisplayHeld counts the frames a node's display rate held back (a newer one went out at the
	// post's next slot instead): when it grows, viewers see a post's updates at its display rate,
	// not each one.
	DisplayHeld = "likes_fanout_display_held_total"
)

// Sample is one reading of a node.
type Sample struct {
	At         time.Time
	CPUSeconds float64
	RSSBytes   float64
	Viewers    float64 // NaN when the node does not export the gauge
	// WatchingReports is the node's watching reports so far; NaN when it exports none.
	WatchingReports float64
	// DisplayHeld is the frames the node's display rate held back so far; NaN when it exports none.
	DisplayHeld float64
}

// Scrape reads base+"/metrics".
func Scrape(ctx context.Context, client *http.Client, base string) (Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return Sample{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("scrape %s: status %d", base, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape %s: %w", base, err)
	}
	s := Sample{At: time.Now(), Viewers: math.NaN(), WatchingReports: math.NaN(), DisplayHeld: math.NaN()}
	var ok bool
	if s.CPUSeconds, ok = sum(families[CPUSeconds]); !ok {
		return Sample{}, fmt.Errorf("scrape %s: no %s", base, CPUSeconds)
	}
	if s.RSSBytes, ok = sum(families[RSSBytes]); !ok {
		return Sample{}, fmt.Errorf("scrape %s: no %s", base, RSSBytes)
	}
	if v, ok := sum(families[Viewers]); ok {
		s.Viewers = v
	}
	if v, ok := sum(families[WatchingReports]); ok {
		s.WatchingReports = v
	}
	if v, ok := sum(families[DisplayHeld]); ok {
		s.DisplayHeld = v
	}
	return s, nil
}

// sum adds the values of every series of a counter, gauge or untyped family.
func sum(mf *dto.MetricFamily) (float64, bool) {
	if mf == nil || len(mf.GetMetric()) == 0 {
		return 0, false
	}
	var total float64
	for _, m := range mf.GetMetric() {
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total, true
}

// CPUPercent returns the node's CPU use between two samples, in percent of one core.
func CPUPercent(a, b Sample) float64 {
	dt := b.At.Sub(a.At).Seconds()
	if dt <= 0 {
		return math.NaN()
	}
	return (b.CPUSeconds - a.CPUSeconds) / dt * 100
}

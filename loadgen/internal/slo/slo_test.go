package slo

import (
	"math"
	"reflect"
	"testing"

	"github.com/likes/likes/loadgen/internal/report"
)

func TestParseRejectsWhatItCannotJudge(t *testing.T) {
	for _, give := range []string{"", "p99", "p99<=fast", "delivery>=99.9", "delivery>=101%", "latency<=1s", "errors=-1", "errors=1.5"} {
		if _, err := Parse(give); err == nil {
			t.Errorf("Parse(%q) = nil error; want one", give)
		}
	}
}

func TestCheck(t *testing.T) {
	healthy := report.Phase{ConnsWanted: 100, LatencyP50Ms: 3, LatencyP99Ms: 40, LatencyP999Ms: 90, LikeP99Ms: 12, DeliveryPct: 100, ConvergencePct: 100}
	tests := []struct {
		name  string
		slo   string
		phase func(p *report.Phase)
		want  []string
	}{
		{"healthy meets the default", Default, func(*report.Phase) {}, nil},
		{"slow", Default, func(p *report.Phase) { p.LatencyP99Ms = 340 }, []string{"p99 340 ms > 100 ms"}},
		{"lossy and slow", Default, func(p *report.Phase) { p.LatencyP99Ms = 120; p.DeliveryPct = 99.899 },
			[]string{"p99 120 ms > 100 ms", "delivery 99.89% < 99.9%"}},
		{"a refused viewer is an error", Default, func(p *report.Phase) { p.ConnsRefused = 3 }, []string{"errors 3 != 0"}},
		{"skipped likes are errors", Default, func(p *report.Phase) { p.LikesSkipped = 2; p.LikeErrors = 1 }, []string{"errors 3 != 0"}},
		{"nothing delivered has no p99", Default, func(p *report.Phase) { p.LatencyP99Ms = report.Float(math.NaN()) },
			[]string{"p99 unknown > 100 ms"}},
		{"a looser objective", "p99<=1s, errors<=5", func(p *report.Phase) { p.LatencyP99Ms = 900; p.ConnsFailed = 5 }, nil},
		{"like latency", "like_p99<10ms", func(*report.Phase) {}, []string{"like_p99 12 ms >= 10 ms"}},
		{"the writers alone have no viewer figures to judge", Default + ",like_p99<=10ms", func(p *report.Phase) {
			p.ConnsWanted = 0
			p.LatencyP99Ms, p.DeliveryPct, p.ConvergencePct = report.Float(math.NaN()), report.Float(math.NaN()), report.Float(math.NaN())
		}, []string{"like_p99 12 ms > 10 ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse(tt.slo)
			if err != nil {
				t.Fatal(err)
			}
			p := healthy
			tt.phase(&p)
			if got := o.Check(&p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Check = %q; want %q", got, tt.want)
			}
		})
	}
}

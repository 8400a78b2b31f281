package ramp

import (
	"math"
	"testing"

	"github.com/likes/likes/loadgen/internal/hist"
)

func TestDelivery(t *testing.T) {
	tests := []struct {
		name         string
		lo, hi       []int64
		viewers      []int
		received     []int64
		wantExpected int64
		wantPct      float64
	}{
		{"all delivered", []int64{10, 0}, []int64{20, 5}, []int{3, 2}, []int64{30, 10}, 40, 100},
		{"one post lost half", []int64{0, 0}, []int64{10, 10}, []int{1, 1}, []int64{10, 5}, 20, 75},
		{"no viewers of a post", []int64{0, 0}, []int64{10, 10}, []int{0, 4}, []int64{0, 40}, 40, 100},
		{"no likes", []int64{7}, []int64{7}, []int{5}, []int64{0}, 0, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			posts := make([]string, len(tt.lo))
			exp, got, pct, per := delivery(posts, tt.lo, tt.hi, tt.viewers, tt.received)
			if exp != tt.wantExpected {
				t.Errorf("expected = %d; want %d", exp, tt.wantExpected)
			}
			if math.IsNaN(tt.wantPct) != math.IsNaN(pct) || (!math.IsNaN(pct) && math.Abs(pct-tt.wantPct) > 1e-9) {
				t.Errorf("pct = %v; want %v", pct, tt.wantPct)
			}
			var sum int64
			for _, p := range per {
				sum += p.Received
			}
			if sum != got || len(per) != len(posts) {
				t.Errorf("per-post received sum %d over %d posts; want %d over %d", sum, len(per), got, len(posts))
			}
		})
	}
}

func TestQuantilesMs(t *testing.T) {
	var h hist.Histogram
	for i := range 1000 {
		h.Record(int64(i+1) * 10) // 10 us .. 10 ms
	}
	p50, p95, p99, p999 := quantilesMs(&h)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", float64(p50), 5}, {"p95", float64(p95), 9.5}, {"p99", float64(p99), 9.9}, {"p99.9", float64(p999), 9.99}} {
		if math.Abs(c.got-c.want) > c.want/32 {
			t.Errorf("%s = %v ms; want %v within 3%%", c.name, c.got, c.want)
		}
	}
}

func TestMemPerConn(t *testing.T) {
	if got := memPerConn(30<<20, 10<<20, 10240); got != 2048 {
		t.Errorf("memPerConn = %v; want 2048", got)
	}
	if got := memPerConn(30<<20, 10<<20, 0); !math.IsNaN(got) {
		t.Errorf("memPerConn with 0 viewers = %v; want NaN", got)
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		have  []int
		total int
		want  []int
	}{
		{[]int{0}, 100, []int{100}},
		{[]int{10000, 0}, 20000, []int{0, 10000}},
		{[]int{10000, 10000, 0, 0, 0}, 64000, []int{2800, 2800, 12800, 12800, 12800}},
		{[]int{5, 1}, 7, []int{0, 1}},
	}
	for _, tt := range tests {
		got := spread(tt.have, tt.total)
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("spread(%v, %d) = %v; want %v", tt.have, tt.total, got, tt.want)
				break
			}
		}
	}
}

package ramp

import (
	"math"

	"github.com/likes/likes/loadgen/internal/hist"
	"github.com/likes/likes/loadgen/internal/report"
)

// delivery computes the delivery figures, the original definition made exact: for each post p,
// the likes measured are those whose counts lie in (lo[p], hi[p]] (lo and hi are the highest
// counts acknowledged at the window's start and end; with fresh users, each count is one like),
// each is due to every viewer of p that was open when the phase began, and received[p] is how many
// of those (count, viewer) deliveries arrived. A like acknowledged in the warmup or the tail is
// outside the range on both sides of the ratio, so warmup and tail cannot fake a loss.
func delivery(posts []string, lo, hi []int64, viewers []int, received []int64) (expected, got int64, pct float64, per []report.Post) {
	for p := range posts {
		likes := max(hi[p]-lo[p], 0) // hi < lo: no like acknowledged in the window
		due := likes * int64(viewers[p])
		expected += due
		got += received[p]
		per = append(per, report.Post{
			ID: posts[p], Viewers: viewers[p], Likes: likes, Received: received[p],
			DeliveryPct: report.Float(percent(received[p], due)),
		})
	}
	return expected, got, percent(got, expected), per
}

// percent returns part/whole in percent, NaN when whole is 0.
func percent(part, whole int64) float64 {
	if whole == 0 {
		return math.NaN()
	}
	return float64(part) / float64(whole) * 100
}

// quantilesMs returns the p50, p95, p99 and p99.9 of a microsecond histogram in milliseconds.
func quantilesMs(h *hist.Histogram) (p50, p95, p99, p999 report.Float) {
	q := func(f float64) report.Float { return report.Float(h.Quantile(f) / 1000) }
	return q(0.5), q(0.95), q(0.99), q(0.999)
}

// memPerConn returns (rss - base) / viewers, NaN when it cannot be known.
func memPerConn(rss, base, viewers float64) float64 {
	if math.IsNaN(rss) || math.IsNaN(base) || math.IsNaN(viewers) || viewers <= 0 {
		return math.NaN()
	}
	return (rss - base) / viewers
}

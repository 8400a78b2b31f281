package ramp

import (
	"context"
	"math"
	"time"

	"github.com/likes/likes/loadgen/internal/hist"
	"github.com/likes/likes/loadgen/internal/likes"
	"github.com/likes/likes/loadgen/internal/report"
	"github.com/likes/likes/loadgen/internal/worker"
)

// oneLikeWindow bounds the frames that count as the like's: its version (Redis's clock at the
// store) falls within it, since it starts before the like is sent.
const oneLikeWindow = time.Minute

// oneLike likes the first post once, with every viewer of the last step still open, and measures
// the whole audience of that post: when each viewer's frame came, from the like's version
// (--one-like). An audience of 100,000 on one post is 10 posts at a million viewers.
func (r *Ramp) oneLike(ctx context.Context) (*report.OneLike, error) {
	o := &report.OneLike{Post: r.posts[0], AckMs: report.Float(math.NaN()), P50Ms: report.Float(math.NaN()),
		P99Ms: report.Float(math.NaN()), LastMs: report.Float(math.NaN())}
	base, err := r.counts(ctx)
	if err != nil {
		return o, err
	}
	t0 := time.Now()
	begin := &worker.Begin{Base: base, WindowStartUS: t0.UnixMicro(), WindowEndUS: t0.Add(oneLikeWindow).UnixMicro()}
	replies, err := r.pool.all(worker.Request{Op: worker.OpBegin, Begin: begin})
	if err != nil {
		return o, err
	}
	for _, rep := range replies {
		if len(rep.Begin.Viewers) > 0 {
			o.Viewers += rep.Begin.Viewers[0]
		}
	}
	win := &likes.Window{Start: t0, End: t0.Add(oneLikeWindow)}
	r.load.Recorder().SetWindow(win)
	defer r.load.Recorder().SetWindow(nil)
	r.progress.update("one like to post %s (%d viewers)", o.Post, o.Viewers)
	r.load.Once(ctx, 0)
	if win.Acked.Load() != 1 {
		o.Error = r.load.Recorder().LastError()
		return o, nil
	}
	o.AckMs = report.Float(win.Latency.Quantile(1) / 1000)
	final, err := r.counts(ctx)
	if err != nil {
		return o, err
	}
	conv, err := r.pool.all(worker.Request{Op: worker.OpConverge,
		Converge: &worker.Converge{Final: final, TimeoutMS: int(r.cfg.ConvergeTimeout.Milliseconds())}})
	if err != nil {
		return o, err
	}
	for _, rep := range conv {
		o.Converged += rep.Converge.Converged
		o.ConvergeTotal += rep.Converge.Total
	}
	reps, err := r.pool.all(worker.Request{Op: worker.OpReport, Report: &worker.ReportRange{Lo: base, Hi: final}})
	if err != nil {
		return o, err
	}
	var lat hist.Histogram
	for _, rep := range reps {
		if len(rep.Report.Received) > 0 {
			o.Delivered += rep.Report.Received[0]
		}
		lat.Merge(rep.Report.Latency)
	}
	q := func(f float64) report.Float { return report.Float(lat.Quantile(f) / 1000) }
	o.P50Ms, o.P99Ms, o.LastMs = q(0.5), q(0.99), q(1)
	return o, nil
}

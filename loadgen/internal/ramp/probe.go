package ramp

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/likes/likes/loadgen/internal/likes"
	"github.com/likes/likes/loadgen/internal/nodemetrics"
	"github.com/likes/likes/loadgen/internal/report"
)

// probePosts is how many posts, none watched, the write probe's likes go to in turn: enough that
// they are not one hot post (whose likes share script calls), the same in every window.
const probePosts = 100

// newProbe returns the write probe's load (--write-probe): likes by fresh users of their own
// (users + "probe") to posts no viewer watches.
func newProbe(cfg Config, users string, identity []likes.Option) *likes.Load {
	posts := make([]string, probePosts)
	for i := range posts {
		posts[i] = cfg.PostPrefix + "-probe-" + strconv.Itoa(i)
	}
	return likes.New(cfg.Writer, posts, users+"probe", 512, cfg.LikeTimeout, identity...)
}

// startProbe sends the probe's likes at cfg.WriteProbe a second, recording those answered within
// win, and returns a function that stops them and waits (idempotent; a no-op without a probe).
func (r *Ramp) startProbe(ctx context.Context, win *likes.Window) func() {
	if r.probe == nil {
		return func() {}
	}
	r.probe.Recorder().SetWindow(win)
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // exits when pctx is cancelled and the likes in flight are answered
		defer close(done)
		r.probe.Open(pctx, r.cfg.WriteProbe, r.cfg.MaxInflight)
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// probeAlone runs the probe for the warmup and a window before any viewer connects: the writer's
// cost per like with nothing to fan out, which each phase's probe is compared with.
func (r *Ramp) probeAlone(ctx context.Context) (*report.Probe, error) {
	t0 := time.Now().Add(r.cfg.Warmup)
	win := &likes.Window{Start: t0, End: t0.Add(r.cfg.Window)}
	stop := r.startProbe(ctx, win)
	defer stop()
	if err := r.watch(ctx, "write probe alone: warmup", win.Start); err != nil {
		return nil, err
	}
	w0 := r.scrapeWriters(ctx)
	c0, ok0 := r.redisCPU(ctx)
	at0 := time.Now()
	if err := r.watch(ctx, "write probe alone: window", win.End); err != nil {
		return nil, err
	}
	w1 := r.scrapeWriters(ctx)
	c1, ok1 := r.redisCPU(ctx)
	dt := time.Since(at0).Seconds()
	stop()
	redisUsed := math.NaN()
	if ok0 && ok1 {
		redisUsed = (c1 - c0).Seconds()
	}
	return r.probeFigures(win, 0, w0, w1, redisUsed, dt), nil
}

// probeFigures are the probe's figures over a window of dt seconds (the configured window's
// likes over its length; CPU over dt), with others likes/s acknowledged beside it (a phase's);
// redisUsed is Redis's CPU seconds over dt, NaN when unread.
func (r *Ramp) probeFigures(win *likes.Window, others float64, w0, w1 []nodemetrics.Sample, redisUsed, dt float64) *report.Probe {
	p := &report.Probe{
		Rate: r.cfg.WriteProbe, LikesPerSec: float64(win.Acked.Load()) / r.cfg.Window.Seconds(), Errors: win.Errors.Load(),
		LikeP99Ms: report.Float(win.Latency.Quantile(0.99) / 1000), WriterCPUPct: report.Float(math.NaN()),
		LikesPerWriterCPUSec: report.Float(math.NaN()), RedisMicrosPerLike: report.Float(math.NaN()),
	}
	all := p.LikesPerSec + others
	if cpu, ok := writersCPU(w0, w1); ok {
		p.WriterCPUPct = report.Float(cpu)
		if cpu > 0 {
			p.LikesPerWriterCPUSec = report.Float(all / (cpu / 100))
		}
	}
	if idle := r.redisIdle * dt; !math.IsNaN(redisUsed) && !math.IsNaN(idle) && all > 0 {
		p.RedisMicrosPerLike = report.Float(max(redisUsed-idle, 0) / (all * dt) * 1e6)
	}
	return p
}

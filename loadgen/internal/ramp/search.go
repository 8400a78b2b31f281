package ramp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/likes/likes/loadgen/internal/report"
	"github.com/likes/likes/loadgen/internal/slo"
)

// Search is `loadgen ramp --until-break`: grow the load by Factor each step until a step breaks
// the objective, then halve the gap between the last clean load and the first broken one until
// it is within Precision of the clean one. The last clean load is the capacity. The first step
// is the first of Config.Conns at Config.Rate.
type Search struct {
	GrowRate  bool          // grow the like rate at fixed viewers (--grow rate); else the viewers
	Factor    float64       // growth per step before the first break
	Precision float64       // stop when (broken - clean) <= Precision x clean
	MaxSteps  int           // at most this many steps
	MaxTime   time.Duration // and no step started that would end past this
}

// Grow names what the search grows.
func (s *Search) Grow() string {
	if s.GrowRate {
		return "rate"
	}
	return "conns"
}

func (s *Search) validate(c *Config) error {
	switch {
	case c.Rate <= 0 && (c.React == nil || s.GrowRate):
		return errors.New("--until-break needs --rate: an open loop's fixed update rate (a closed loop slows down with the writer; " +
			"--react with --rate 0 grows the room at its ceiling)")
	case s.Factor <= 1:
		return errors.New("--grow-factor must be above 1")
	case s.Precision <= 0 || s.Precision >= 1:
		return errors.New("--precision must be between 0 and 1")
	case s.MaxSteps < 1 || s.MaxTime <= 0:
		return errors.New("--max-steps and --max-time must be positive")
	case !s.GrowRate && c.Conns[0] < 1:
		return errors.New("--until-break grows the viewers from the first --conns: it must be at least 1 (--grow rate searches the writers alone with --conns 0)")
	}
	return nil
}

// bracket is the search's state: the largest clean load so far and the smallest broken one.
type bracket struct {
	clean, broken float64 // 0 and +Inf until found
	cleanStep     int     // index in the result's phases; -1 until one is clean
	brokenStep    int
}

// next returns the load to try after load was clean (or not), and "" or why the search ends.
func (s *Search) next(b *bracket, load float64, floor float64) (float64, string) {
	switch {
	case math.IsInf(b.broken, 1):
		return load * s.Factor, ""
	case b.clean == 0:
		if down := load / s.Factor; down >= floor {
			return down, ""
		}
		return 0, "nothing clean"
	case b.broken-b.clean <= s.Precision*b.clean:
		return 0, fmt.Sprintf("within %.0f%%", s.Precision*100)
	}
	return (b.clean + b.broken) / 2, ""
}

// search runs the steps and fills res.Capacity. Steps are phases of the result, in the order run.
func (r *Ramp) search(ctx context.Context, res *report.Result) error {
	s := r.cfg.Search
	start := time.Now()
	b := bracket{broken: math.Inf(1), cleanStep: -1, brokenStep: -1}
	load, floor := float64(r.cfg.Conns[0]), 1.0
	if s.GrowRate {
		load, floor = r.cfg.Rate, 0.1
	}
	stopped := "max steps"
	var longest time.Duration
	for step := 0; step < s.MaxSteps; step++ {
		if time.Since(start)+longest > s.MaxTime {
			stopped = "max time"
			break
		}
		conns, rate := r.cfg.Conns[0], r.cfg.Rate
		if s.GrowRate {
			rate = load
		} else {
			conns = int(math.Round(load))
		}
		offered := fmt.Sprintf("%g likes/s", rate)
		if r.cfg.React != nil {
			offered = "reactions at the ceiling"
			if rate > 0 {
				offered = fmt.Sprintf("%g reactions/s", rate)
			}
		}
		label := fmt.Sprintf("step %d/%d (%d conns, %s)", step+1, s.MaxSteps, conns, offered)
		began := time.Now()
		ph, err := r.step(ctx, label, conns, rate)
		if err != nil {
			if ctx.Err() != nil {
				stopped = "interrupted"
			}
			r.capacity(res, &b, stopped, step, start)
			return fmt.Errorf("%s: %w", label, err)
		}
		longest = max(longest, time.Since(began))
		res.Phases = append(res.Phases, ph)
		k := len(res.Phases) - 1
		if len(ph.Broke) == 0 {
			b.clean, b.cleanStep = load, k
		} else if load < b.broken {
			b.broken, b.brokenStep = load, k
		}
		r.progress.line("%s", stepSummary(label, &ph))
		var why string
		if load, why = s.next(&b, load, floor); why != "" {
			stopped = why
			break
		}
		if !s.GrowRate {
			// Whole viewers; a step that rounds onto a load already judged has nothing to add.
			if load = math.Round(load); load == b.clean || load == b.broken {
				stopped = fmt.Sprintf("within %.0f%%", s.Precision*100)
				break
			}
		}
	}
	r.capacity(res, &b, stopped, len(res.Phases), start)
	return nil
}

// step runs one phase at conns viewers and rate likes/s. Fewer viewers than the workers hold
// means starting over: every viewer is closed and the nodes are given time to let them go, so
// the step measures a node with conns viewers and nothing left from the step before.
func (r *Ramp) step(ctx context.Context, label string, conns int, rate float64) (report.Phase, error) {
	if conns < r.pool.next {
		r.progress.line("%s: closing the %d viewers of the last step first", label, r.pool.next)
		r.pool.close()
		r.pool = newPool(&r.cfg, r.posts, r.progress.out)
		r.awaitNodesEmpty(ctx, 30*time.Second)
	}
	return r.phase(ctx, label, conns, rate)
}

// awaitNodesEmpty waits until the nodes hold no more viewers than before the ramp, or limit.
func (r *Ramp) awaitNodesEmpty(ctx context.Context, limit time.Duration) {
	var before float64
	for _, s := range r.baseline {
		if !math.IsNaN(s.Viewers) {
			before += s.Viewers
		}
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var now float64
		for _, s := range r.scrapeNodes(ctx) {
			if !math.IsNaN(s.Viewers) {
				now += s.Viewers
			}
		}
		if now <= before {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// capacity fills res.Capacity from the bracket.
func (r *Ramp) capacity(res *report.Result, b *bracket, stopped string, steps int, start time.Time) {
	c := &report.Capacity{
		Grow: r.cfg.Search.Grow(), Objective: r.cfg.Objective.String(), Nodes: len(r.cfg.Nodes),
		Stopped: stopped, Steps: steps, Seconds: math.Round(time.Since(start).Seconds()),
	}
	if b.cleanStep >= 0 {
		p := &res.Phases[b.cleanStep]
		c.Conns, c.LikesPerSec, c.EventsPerSec = p.ConnsWanted, p.OfferedLikesPerSec, p.EventsPerSec
		c.UpdatesPerSec = float64(p.UpdatesPerSec)
	}
	if b.brokenStep >= 0 {
		p := &res.Phases[b.brokenStep]
		c.Broke = &report.Step{
			Conns: p.ConnsWanted, UpdatesPerSec: float64(p.UpdatesPerSec), LikesPerSec: p.OfferedLikesPerSec,
			EventsPerSec: p.EventsPerSec, Reasons: p.Broke, LatencyP99Ms: p.LatencyP99Ms, DeliveryPct: p.DeliveryPct,
			Errors: slo.Errors(p),
		}
	}
	res.Capacity = c
	r.progress.line("%s", report.CapacityLine(c))
}

func stepSummary(label string, ph *report.Phase) string {
	verdict := "clean"
	if len(ph.Broke) > 0 {
		verdict = "broke: " + strings.Join(ph.Broke, ", ")
	}
	return fmt.Sprintf("%s: %s (%.0f events/s, delivery %s%%, p99 %s ms, %d open)", label, verdict,
		ph.EventsPerSec, fmtF(ph.DeliveryPct, 2), fmtF(ph.LatencyP99Ms, 1), ph.ConnsOpen)
}

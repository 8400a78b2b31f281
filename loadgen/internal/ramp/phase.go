package ramp

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/likes/likes/loadgen/internal/hist"
	"github.com/likes/likes/loadgen/internal/likes"
	"github.com/likes/likes/loadgen/internal/nodemetrics"
	"github.com/likes/likes/loadgen/internal/procstat"
	"github.com/likes/likes/loadgen/internal/report"
	"github.com/likes/likes/loadgen/internal/worker"
)

// saturationPct is the share of its CPUs above which the generator warns that it, not the system
// under test, may be the limit.
const saturationPct = 85

// sample is everything read at the start and at the end of a window.
type sample struct {
	at      time.Time
	max     []int64 // highest acknowledged count per post
	status  worker.Status
	nodes   []nodemetrics.Sample
	writers []nodemetrics.Sample // a zero Sample for a writer without usable /metrics
	ownCPU  time.Duration
	cores   procstat.CoreTimes
	redis   time.Duration // Redis's CPU time, when redisOK
	redisOK bool
	skipped int64   // open loop: likes skipped so far
	subs    []int64 // per post: Redis subscribers (nil without --redis, or unread)
}

func (r *Ramp) sample(ctx context.Context) (sample, error) {
	s := sample{at: time.Now(), max: r.load.Recorder().MaxCounts(), ownCPU: procstat.CPU()}
	_, _, s.skipped = r.load.Recorder().Totals()
	s.cores, _ = procstat.AllowedCoreTimes()
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { s.status, err = r.pool.status() })
	wg.Go(func() { s.nodes = r.scrapeNodes(ctx) })
	wg.Go(func() { s.writers = r.scrapeWriters(ctx) })
	wg.Go(func() { s.redis, s.redisOK = r.redisCPU(ctx) })
	if r.redis != nil {
		wg.Go(func() {
			var err error
			if s.subs, err = r.redis.subscribers(ctx, r.posts); err != nil {
				r.progress.line("loadgen: redis subscribers: %v", err)
				s.subs = nil
			}
		})
	}
	wg.Wait()
	return s, err
}

// phase runs one step of the ramp: connect up to wanted viewers, likes (rate per second, or the
// closed loop when 0) for warmup and window, stop, converge, report, judge.
func (r *Ramp) phase(ctx context.Context, label string, wanted int, rate float64) (report.Phase, error) {
	var capped string
	if x := r.cfg.React; x != nil {
		people := x.people(wanted)
		if ceiling := x.ceiling(people); rate <= 0 || rate > ceiling {
			if rate > ceiling {
				capped = fmt.Sprintf("%g reactions/s asked, above what %d people can send (one each per %v): offered %g", rate, people, x.Interval, ceiling)
			}
			rate = ceiling
		}
		r.load.SetAudience(people)
	}
	ph := report.Phase{ConnsWanted: wanted, OfferedLikesPerSec: rate, UpdatesPerSec: report.Float(math.NaN())}
	if capped != "" {
		ph.Notes = append(ph.Notes, capped)
	}
	if rate > 0 && r.cfg.React == nil {
		ph.UpdatesPerSec = report.Float(rate / float64(len(r.posts)) * float64(max(r.cfg.Feed, 1)))
	}
	pre, err := r.pool.status()
	if err != nil {
		return ph, err
	}
	preNodes := r.scrapeNodes(ctx)
	start := time.Now()
	if err := r.pool.connect(wanted, r.cfg.MaxConnectRate); err != nil {
		return ph, err
	}
	st, err := r.waitConnected(ctx, label, wanted)
	if err != nil {
		return ph, err
	}
	ph.ConnectMillis = int(time.Since(start).Milliseconds())
	ph.Workers = len(r.pool.clients)
	ph.ConnsFailed, ph.ConnsRefused = st.Failed, st.Refused
	idle := r.scrapeNodes(ctx)
	ph.ConnectNodeCPUMicros = report.Float(connectCost(preNodes, idle, st.Open-pre.Open))
	base, err := r.counts(ctx)
	if err != nil {
		return ph, err
	}

	t0 := time.Now().Add(r.cfg.Warmup)
	t1 := t0.Add(r.cfg.Window)
	begin := &worker.Begin{Base: base, WindowStartUS: t0.UnixMicro(), WindowEndUS: t1.UnixMicro()}
	if r.cfg.Feed <= 1 && len(r.pool.clients) > 0 { // none: --conns 0, the writers alone
		begin.SampleViewers = (r.cfg.LatencySample + len(r.pool.clients) - 1) / len(r.pool.clients)
	}
	replies, err := r.pool.all(worker.Request{Op: worker.OpBegin, Begin: begin})
	if err != nil {
		return ph, err
	}
	viewers := make([]int, len(r.posts))
	for _, rep := range replies {
		for p, n := range rep.Begin.Viewers {
			viewers[p] += n
		}
		ph.ConnsOpen += rep.Begin.Open
	}
	win := &likes.Window{Start: t0, End: t1}
	r.load.Recorder().SetWindow(win)
	stopWrites := r.startWrites(ctx, rate)
	defer stopWrites()
	var probeWin *likes.Window
	if r.probe != nil {
		probeWin = &likes.Window{Start: t0, End: t1}
	}
	stopProbe := r.startProbe(ctx, probeWin)
	defer stopProbe()
	var storm *stormRun
	if r.cfg.Storm != nil {
		sctx, cancel := context.WithCancel(ctx)
		if storm = r.startStorm(sctx, t0.Add(r.cfg.Storm.After)); storm != nil {
			defer func() { // a phase that ends early stops the kill still waiting for its time
				cancel()
				_ = storm.wait()
			}()
		} else {
			cancel()
		}
	}

	if err := r.watch(ctx, label+" warmup", t0); err != nil {
		return ph, err
	}
	s0, err := r.sample(ctx)
	if err != nil {
		return ph, err
	}
	// Counts at or below the phase's base were used before it (a like that failed at the HTTP
	// level may still have been stored); they are not this window's.
	for p := range s0.max {
		s0.max[p] = max(s0.max[p], base[p])
	}
	if err := r.watch(ctx, label+" window", t1); err != nil {
		return ph, err
	}
	s1, err := r.sample(ctx)
	if err != nil {
		return ph, err
	}
	stopWrites()
	stopProbe()
	if storm != nil {
		if err := storm.wait(); err != nil {
			return ph, err
		}
	}
	r.progress.update("%s: writes stopped, checking convergence", label)

	final, err := r.counts(ctx)
	if err != nil {
		return ph, err
	}
	converge := &worker.Converge{Final: final, TimeoutMS: int(r.cfg.ConvergeTimeout.Milliseconds())}
	if r.cfg.React != nil {
		if converge.FinalReactions, err = r.reactionTotals(ctx); err != nil {
			return ph, err
		}
	}
	conv, err := r.pool.all(worker.Request{Op: worker.OpConverge, Converge: converge})
	if err != nil {
		return ph, err
	}
	reps, err := r.pool.all(worker.Request{Op: worker.OpReport, Report: &worker.ReportRange{Lo: s0.max, Hi: s1.max}})
	if err != nil {
		return ph, err
	}
	end, err := r.pool.status()
	if err != nil {
		return ph, err
	}
	r.fill(&ph, figures{viewers: viewers, idle: idle, s0: s0, s1: s1, win: win, probe: probeWin, conv: conv, reps: reps, before: st, end: end})
	if storm != nil {
		r.fillStorm(&ph, st, end)
	}
	return ph, nil
}

// startWrites starts the like load and returns a function that stops it and waits (idempotent).
func (r *Ramp) startWrites(ctx context.Context, rate float64) func() {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // exits when wctx is cancelled and the likes in flight are answered
		defer close(done)
		if rate > 0 {
			r.load.Open(wctx, rate, r.cfg.MaxInflight)
		} else {
			r.load.Closed(wctx, r.cfg.Writers)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// waitConnected polls the workers until no viewer is still connecting. Past a deadline (the time
// the connect rate needs plus the handshake timeout and some slack) it abandons the stragglers.
func (r *Ramp) waitConnected(ctx context.Context, label string, wanted int) (worker.Status, error) {
	limit := r.cfg.ConnectTimeout + 30*time.Second
	if r.cfg.MaxConnectRate > 0 {
		limit += time.Duration(float64(wanted) / r.cfg.MaxConnectRate * float64(time.Second))
	}
	deadline := time.Now().Add(limit)
	abandoned := false
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := r.pool.status()
		if err != nil {
			return st, err
		}
		r.progress.update("%s: connecting: open %d / %d, pending %d, failed %d, refused %d",
			label, st.Open, wanted, st.Pending, st.Failed, st.Refused)
		if st.Pending == 0 && st.Wanted >= wanted {
			return st, nil
		}
		if time.Now().After(deadline) {
			if abandoned {
				return st, fmt.Errorf("%d viewers still connecting after abandoning them", st.Pending)
			}
			r.progress.line("%s: %d viewers still connecting after %v: abandoning them", label, st.Pending, limit)
			if _, err := r.pool.all(worker.Request{Op: worker.OpAbandon}); err != nil {
				return st, err
			}
			abandoned = true
			deadline = time.Now().Add(r.cfg.ConnectTimeout + 5*time.Second)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-tick.C:
		}
	}
}

// watch shows progress every second until the time until.
func (r *Ramp) watch(ctx context.Context, label string, until time.Time) error {
	rec := r.load.Recorder()
	lastAt := time.Now()
	lastAcked, _, _ := rec.Totals()
	lastCPU := procstat.CPU()
	st, err := r.pool.status()
	if err != nil {
		return err
	}
	lastEvents, lastWorkerCPU := st.Events, st.CPUMicros
	for {
		wait := min(time.Until(until), time.Second)
		if wait <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		st, err := r.pool.status()
		if err != nil {
			return err
		}
		now := time.Now()
		dt := now.Sub(lastAt).Seconds()
		acked, errs, _ := rec.Totals()
		cpu := procstat.CPU()
		genCPU := (float64(cpu-lastCPU)/1e3 + float64(st.CPUMicros-lastWorkerCPU)) / 1e6 / dt * 100
		r.progress.update("%s %2.0fs left | open %d dropped %d | %.0f likes/s (%d errors) | %.0f events/s | generator CPU %.0f%%",
			label, time.Until(until).Seconds(), st.Open, st.Dropped, float64(acked-lastAcked)/dt, errs,
			float64(st.Events-lastEvents)/dt, genCPU)
		lastAt, lastAcked, lastCPU, lastEvents, lastWorkerCPU = now, acked, cpu, st.Events, st.CPUMicros
	}
}

// figures are the raw readings of a phase.
type figures struct {
	viewers     []int
	idle        []nodemetrics.Sample
	s0, s1      sample
	win         *likes.Window
	probe       *likes.Window // the write probe's; nil without one
	conv        []worker.Reply
	reps        []worker.Reply
	before, end worker.Status
}

// fill computes a phase's reported figures from its readings.
func (r *Ramp) fill(ph *report.Phase, f figures) {
	dt := f.s1.at.Sub(f.s0.at).Seconds()
	window := r.cfg.Window.Seconds()
	ph.LikesAcked = f.win.Acked.Load()
	ph.LikeErrors = f.win.Errors.Load()
	ph.LikesSkipped = f.s1.skipped - f.s0.skipped
	ph.LikesPerSec = float64(ph.LikesAcked) / window
	ph.LikeP50Ms = report.Float(f.win.Latency.Quantile(0.5) / 1000)
	ph.LikeP99Ms = report.Float(f.win.Latency.Quantile(0.99) / 1000)
	ph.EventsPerSec = float64(f.s1.status.Events-f.s0.status.Events) / dt
	ph.WatchingPerSec = float64(f.s1.status.Watching-f.s0.status.Watching) / dt
	// The write probe's likes cost the writer and Redis too: the per-like figures count them.
	probeLikes := 0.0
	if f.probe != nil {
		probeLikes = float64(f.probe.Acked.Load()) / window
	}
	ph.RedisCPUPct, ph.RedisMicrosPerLike = report.Float(math.NaN()), report.Float(math.NaN())
	redisUsed := math.NaN()
	if f.s0.redisOK && f.s1.redisOK {
		used := (f.s1.redis - f.s0.redis).Seconds()
		redisUsed = used
		ph.RedisCPUPct = report.Float(used / dt * 100)
		if likes := (ph.LikesPerSec + probeLikes) * dt; likes > 0 {
			idle := r.redisIdle * dt
			if math.IsNaN(idle) {
				idle = 0
			}
			ph.RedisMicrosPerLike = report.Float(max(used-idle, 0) / likes * 1e6)
		}
	}
	if f.s1.subs != nil {
		nodesOf, viewersOf := holders(r.pool.next, len(r.posts), len(r.cfg.Nodes), r.cfg.Feed)
		ph.Subscribers = compareSubscribers(f.s1.subs, nodesOf, viewersOf)
	}

	received := make([]int64, len(r.posts))
	var lat hist.Histogram
	var overflow int64
	for _, rep := range f.reps {
		for p, n := range rep.Report.Received {
			received[p] += n
		}
		lat.Merge(rep.Report.Latency)
		overflow += rep.Report.Overflow
	}
	var pct float64
	ph.EventsExpected, ph.EventsReceived, pct, ph.Posts = delivery(r.posts, f.s0.max, f.s1.max, f.viewers, received)
	ph.DeliveryPct = report.Float(pct)
	ph.LatencyP50Ms, ph.LatencyP95Ms, ph.LatencyP99Ms, ph.LatencyP999Ms = quantilesMs(&lat)
	ph.LatencySamples = int64(lat.Count())

	var convMs int64
	for _, rep := range f.conv {
		ph.Converged += rep.Converge.Converged
		ph.ConvergeTotal += rep.Converge.Total
		convMs = max(convMs, rep.Converge.ElapsedMS)
	}
	ph.ConvergeMillis = convMs
	ph.ConvergencePct = report.Float(percent(int64(ph.Converged), int64(ph.ConvergeTotal)))
	ph.ConnsDropped = f.end.Dropped - f.before.Dropped

	genMicros := float64(f.s1.ownCPU-f.s0.ownCPU)/1e3 + float64(f.s1.status.CPUMicros-f.s0.status.CPUMicros)
	ph.GenCPUPct = report.Float(genMicros / 1e6 / dt * 100)
	ph.GenCoreBusyPct = report.Float(procstat.BusyPercent(f.s0.cores, f.s1.cores))
	ownRSS, _ := procstat.Memory()
	ph.GenMemBytes = report.Float(float64(ownRSS + f.end.PrivateBytes))
	ph.GenMemPerViewerB = report.Float(memPerConn(float64(ph.GenMemBytes), 0, float64(ph.ConnsOpen)))
	r.fillNodes(ph, f)
	ph.EventsPerNodeCPUSec = report.Float(math.NaN())
	if ph.NodesCPUPct.Known() && ph.NodesCPUPct > 0 {
		ph.EventsPerNodeCPUSec = report.Float(ph.EventsPerSec / (float64(ph.NodesCPUPct) / 100))
	}
	ph.WriterCPUPct, ph.LikesPerWriterCPUSec = report.Float(math.NaN()), report.Float(math.NaN())
	if cpu, ok := writersCPU(f.s0.writers, f.s1.writers); ok {
		ph.WriterCPUPct = report.Float(cpu)
		if ph.WriterCPUPct > 0 {
			ph.LikesPerWriterCPUSec = report.Float((ph.LikesPerSec + probeLikes) / (float64(ph.WriterCPUPct) / 100))
		}
	}
	if f.probe != nil {
		ph.Probe = r.probeFigures(f.probe, ph.LikesPerSec, f.s0.writers, f.s1.writers, redisUsed, dt)
	}
	if r.cfg.React != nil || (displayHeld(f) && r.cfg.Feed <= 1) {
		r.fillDisplayed(ph, f)
	}
	r.notes(ph, f, overflow)
	ph.Broke = r.cfg.Objective.Check(ph)
	if float64(ph.GenCPUPct) >= saturationPct/100.0*float64(r.genCPUs*100) {
		// Past this the generator, not the deployment, may be what breaks.
		ph.Broke = append(ph.Broke, fmt.Sprintf("generator saturated (%.0f%% of its %d CPU(s))", float64(ph.GenCPUPct), r.genCPUs))
	}
}

func (r *Ramp) fillNodes(ph *report.Phase, f figures) {
	var cpuSum, growIdle, viewersIdle, grow, viewersEnd, reports float64
	cpuKnown, estimated := true, false
	for n, url := range r.cfg.Nodes {
		node := report.Node{URL: url, CPUPct: report.Float(math.NaN())}
		base, idle, end := r.baseline[n], f.idle[n], f.s1.nodes[n]
		if !f.s0.nodes[n].At.IsZero() && !end.At.IsZero() {
			node.CPUPct = report.Float(nodemetrics.CPUPercent(f.s0.nodes[n], end))
			cpuSum += float64(node.CPUPct)
			reports += end.WatchingReports - f.s0.nodes[n].WatchingReports // NaN if a node has none
		} else {
			cpuKnown = false
		}
		idleViewers, endViewers := idle.Viewers, end.Viewers
		if math.IsNaN(idleViewers) || math.IsNaN(endViewers) {
			// The node does not export its viewers gauge: assume an even spread of ours.
			estimate := float64(ph.ConnsOpen) / float64(len(r.cfg.Nodes))
			idleViewers, endViewers = estimate, estimate
			estimated = true
		}
		node.Viewers = report.Float(endViewers)
		node.RSSBaseBytes, node.RSSIdleBytes, node.RSSBytes = report.Float(rss(base)), report.Float(rss(idle)), report.Float(rss(end))
		node.RSSStartBytes = report.Float(rss(f.s0.nodes[n]))
		node.MemPerConnIdleB = report.Float(memPerConn(rss(idle), rss(base), idleViewers))
		node.MemPerConnB = report.Float(memPerConn(rss(end), rss(base), endViewers))
		if node.MemPerConnIdleB.Known() {
			growIdle += rss(idle) - rss(base)
			viewersIdle += idleViewers
		}
		if node.MemPerConnB.Known() {
			grow += rss(end) - rss(base)
			viewersEnd += endViewers
		}
		ph.Nodes = append(ph.Nodes, node)
	}
	ph.NodesCPUPct, ph.WatchingReportsPerSec = report.Float(math.NaN()), report.Float(math.NaN())
	if cpuKnown {
		ph.NodesCPUPct = report.Float(cpuSum)
		ph.WatchingReportsPerSec = report.Float(reports / f.s1.at.Sub(f.s0.at).Seconds())
	}
	if estimated {
		ph.Notes = append(ph.Notes, "a node exports no "+nodemetrics.Viewers+" gauge: its viewers are estimated as an even share of ours")
	}
	ph.MemPerConnIdleB = report.Float(memPerConn(growIdle, 0, viewersIdle))
	ph.MemPerConnB = report.Float(memPerConn(grow, 0, viewersEnd))
}

// notes explains anything that limits how a phase's figures read.
func (r *Ramp) notes(ph *report.Phase, f figures, overflow int64) {
	add := func(format string, args ...any) { ph.Notes = append(ph.Notes, fmt.Sprintf(format, args...)) }
	if ph.ConnsRefused > 0 {
		add("capped: %d viewers refused by the fanout nodes (503, max-conns); they are not counted as lost deliveries", ph.ConnsRefused)
	}
	if ph.ConnsFailed > 0 {
		add("%d viewers failed to connect: %s", ph.ConnsFailed, reasons(f.end.Errors))
	}
	if ph.ConnsDropped > 0 {
		add("%d viewers were disconnected during the phase; their missed events count as lost", ph.ConnsDropped)
	}
	if soft := f.end.NoFileSoft; soft > 0 && soft < uint64(r.cfg.PerWorker)+64 {
		add("open-file limit %d of a worker process caps it below %d viewers", soft, r.cfg.PerWorker)
	}
	allowed := float64(r.genCPUs * 100)
	if float64(ph.GenCPUPct) >= saturationPct/100.0*allowed {
		ph.GenSaturated = true
		add("WARNING: the generator used %.0f%% CPU of the %d CPU(s) it may run on: it may be the bottleneck", float64(ph.GenCPUPct), r.genCPUs)
	}
	if float64(ph.GenCoreBusyPct) >= 95 {
		ph.GenSaturated = true
		add("WARNING: the generator's CPU(s) were %.0f%% busy (with whatever shares them): reading may lag", float64(ph.GenCoreBusyPct))
	}
	if _, _, skipped := r.load.Recorder().Totals(); skipped > 0 && r.cfg.Rate > 0 {
		add("open loop: %d likes skipped so far because %d were already in flight (the writer is not keeping up)", skipped, r.cfg.MaxInflight)
	}
	if ph.LikeErrors > 0 {
		add("%d like errors in the window; last: %s", ph.LikeErrors, r.load.Recorder().LastError())
	}
	if s := ph.Subscribers; s != nil && s.Mismatch > 0 {
		add("%d posts have Redis subscribers (%d-%d) other than the nodes holding their viewers (at most %d)", s.Mismatch, s.Min, s.Max, s.NodesMax)
	}
	if overflow > 0 {
		add("%d events beyond the tally's range were not counted", overflow)
	}
	if f.end.Malformed > 0 {
		add("%d malformed events received so far", f.end.Malformed)
	}
}

func reasons(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s (%d)", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

package ramp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/likes/likes/loadgen/internal/likes"
	"github.com/likes/likes/loadgen/internal/nodemetrics"
	"github.com/likes/likes/loadgen/internal/procstat"
	"github.com/likes/likes/loadgen/internal/report"
)

// MemMethod says how memory per connection is computed.
const MemMethod = "(node RSS - node RSS at 0 viewers, read before the ramp) / node's viewers gauge; " +
	"idle = after connecting, before likes; loaded = at the end of the window"

// Ramp is one run.
type Ramp struct {
	cfg      Config
	posts    []string
	progress *progress
	pool     *pool
	load     *likes.Load
	probe    *likes.Load  // --write-probe; nil without it
	client   *http.Client // metrics and counts
	redis    *redisView   // CPU and subscriptions; nil without cfg.Redis
	baseline []nodemetrics.Sample
	genCPUs  int
	// redisIdle is Redis's CPU per second of wall time before any load (its own housekeeping and
	// the nodes' health checks): a phase's Redis CPU per like leaves it out, or at a few hundred
	// likes a second it would be most of the figure.
	redisIdle float64
	stormed   bool // the node loss (cfg.Storm) has been started
}

// Run executes the ramp phase by phase. It returns the phases completed so far even when it stops
// early (an error, or ctx cancelled by Ctrl-C), so the caller can still print them.
func Run(ctx context.Context, cfg Config, stderr io.Writer) (*report.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Ramp{
		cfg:      cfg,
		progress: newProgress(stderr),
		client:   &http.Client{Timeout: 5 * time.Second},
		genCPUs:  procstat.AllowedCPUs(),
	}
	for p := range cfg.Posts {
		r.posts = append(r.posts, cfg.PostPrefix+"-"+strconv.Itoa(p))
	}
	res := &report.Result{
		Started: time.Now().UTC().Format(time.RFC3339), Command: cfg.Command, Writer: cfg.Writer,
		Nodes: cfg.Nodes, Posts: cfg.Posts, Feed: cfg.Feed, Mode: cfg.Mode(), Warmup: cfg.Warmup.String(),
		Window: cfg.Window.String(), Sources: len(cfg.Sources), GenCPUs: r.genCPUs, MemMethod: MemMethod,
		Objective: cfg.Objective.String(), RedisIdleCPUPct: report.Float(math.NaN()),
	}
	if soft, err := procstat.RaiseNoFile(); err != nil {
		r.progress.line("loadgen: could not raise the open-file limit (soft %d): %v", soft, err)
	}
	maxConns := cfg.Writers
	if cfg.Rate > 0 || cfg.React != nil {
		maxConns = 512
	}
	if cfg.Redis != "" || len(cfg.RedisSentinels) > 0 {
		r.redis = newRedisView(ctx, cfg)
		defer r.redis.close()
	}
	var identity []likes.Option
	users := cfg.UserPrefix
	if cfg.Identity == IdentityBench {
		bench, prefix, err := benchSessions(cfg)
		if err != nil {
			return res, err
		}
		identity, users = append(identity, bench), prefix
	}
	if cfg.Identity == IdentitySession {
		s, err := startSessions(ctx, r.redis, cfg)
		if err != nil {
			return res, err
		}
		defer s.close()
		identity = append(identity, likes.WithSessions(s.follow))
	}
	if x := cfg.React; x != nil {
		identity = append(identity, likes.WithReactions(x.Kinds, x.Interval))
	}
	r.load = likes.New(cfg.Writer, r.posts, users, maxConns, cfg.LikeTimeout, identity...)
	defer r.load.Close()
	if cfg.WriteProbe > 0 {
		r.probe = newProbe(cfg, users, identity)
		defer r.probe.Close()
	}
	r.pool = newPool(&r.cfg, r.posts, stderr)
	defer func() { r.pool.close() }() // a search may replace the pool

	if err := r.checkWriter(ctx); err != nil {
		return res, err
	}
	r.baseline = r.scrapeNodes(ctx)
	for i, s := range r.baseline {
		if !s.At.IsZero() && s.Viewers > 0 {
			r.progress.line("loadgen: node %s already has %.0f viewers: memory per connection includes theirs", cfg.Nodes[i], s.Viewers)
		}
	}
	if r.redis != nil {
		r.redisIdle = r.idleRedisCPU(ctx)
		res.RedisIdleCPUPct = report.Float(r.redisIdle * 100)
	}
	if r.probe != nil {
		p, err := r.probeAlone(ctx)
		if err != nil {
			return res, fmt.Errorf("write probe alone: %w", err)
		}
		res.ProbeAlone = p
		r.progress.line("%s", report.ProbeLine(p))
	}
	var err error
	if cfg.Search != nil {
		err = r.search(ctx, res)
	} else {
		err = r.phases(ctx, res)
	}
	if err == nil && cfg.OneLike {
		res.OneLike, err = r.oneLike(ctx)
		r.progress.line("%s", report.OneLikeLine(res.OneLike))
	}
	return res, err
}

// phases runs one phase per Config.Conns.
func (r *Ramp) phases(ctx context.Context, res *report.Result) error {
	for i, n := range r.cfg.Conns {
		ph, err := r.phase(ctx, fmt.Sprintf("phase %d/%d (%d conns)", i+1, len(r.cfg.Conns), n), n, r.cfg.Rate)
		if err != nil {
			return fmt.Errorf("phase %d (%d conns): %w", i+1, n, err)
		}
		res.Phases = append(res.Phases, ph)
		r.progress.line("%s", summary(i, len(r.cfg.Conns), &ph))
	}
	return nil
}

func summary(i, n int, ph *report.Phase) string {
	verdict := "objective met"
	if len(ph.Broke) > 0 {
		verdict = "objective broken: " + strings.Join(ph.Broke, ", ")
	}
	return fmt.Sprintf("phase %d/%d done: %d conns open (%d refused, %d failed), %.0f likes/s, %.0f events/s, "+
		"delivery %s%%, convergence %s%%, latency p99 %s ms, generator CPU %s%%; %s",
		i+1, n, ph.ConnsOpen, ph.ConnsRefused, ph.ConnsFailed, ph.LikesPerSec, ph.EventsPerSec,
		fmtF(ph.DeliveryPct, 2), fmtF(ph.ConvergencePct, 1), fmtF(ph.LatencyP99Ms, 1), fmtF(ph.GenCPUPct, 0), verdict)
}

func fmtF(f report.Float, prec int) string {
	if !f.Known() {
		return "-"
	}
	return strconv.FormatFloat(float64(f), 'f', prec, 64)
}

// checkWriter fails fast when the writer does not answer GET /count.
func (r *Ramp) checkWriter(ctx context.Context) error {
	_, err := r.count(ctx, r.posts[0])
	return err
}

// countReaders bounds the GET /count requests in flight: a ramp over thousands of posts would
// otherwise send them all at once and time out on its own writer.
const countReaders = 32

// counts returns every post's count from the writer.
func (r *Ramp) counts(ctx context.Context) ([]int64, error) {
	out := make([]int64, len(r.posts))
	errs := make([]error, len(r.posts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(countReaders, len(r.posts)) {
		wg.Go(func() { // exits when next is closed
			for p := range next {
				out[p], errs[p] = r.count(ctx, r.posts[p])
			}
		})
	}
	for p := range r.posts {
		next <- p
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}

// readRefusedHint explains a 429 to a read of counts: the ramp reads every post's count from one
// address, which the writers' READ_ADDR_RATE counts together.
func readRefusedHint(status int) string {
	if status != http.StatusTooManyRequests {
		return ""
	}
	return " (the writers' READ_ADDR_RATE refused it: the ramp reads all its counts from one address; run the writers with READ_ADDR_RATE=off)"
}

func (r *Ramp) count(ctx context.Context, post string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.Writer+"/count/"+post, nil)
	if err != nil {
		return 0, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("writer count: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("writer count %s: status %d%s", post, resp.StatusCode, readRefusedHint(resp.StatusCode))
	}
	var body struct {
		Count int64 `json:"count"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body); err != nil {
		return 0, fmt.Errorf("writer count %s: %w", post, err)
	}
	return body.Count, nil
}

// scrapeNodes reads every node's metrics at once; a node that fails gives a zero Sample (At zero).
func (r *Ramp) scrapeNodes(ctx context.Context) []nodemetrics.Sample {
	out := make([]nodemetrics.Sample, len(r.cfg.Nodes))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i, n := range r.cfg.Nodes {
		wg.Go(func() {
			s, err := nodemetrics.Scrape(ctx, r.client, n)
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				return
			}
			out[i] = s
		})
	}
	wg.Wait()
	for _, f := range failures {
		r.progress.line("loadgen: %s", f)
	}
	return out
}

// scrapeWriters reads every writer's metrics (cfg.WriterMetrics, else the writer URL itself).
func (r *Ramp) scrapeWriters(ctx context.Context) []nodemetrics.Sample {
	urls := r.cfg.WriterMetrics
	if len(urls) == 0 {
		urls = []string{r.cfg.Writer}
	}
	out := make([]nodemetrics.Sample, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { out[i], _ = nodemetrics.Scrape(ctx, r.client, u) })
	}
	wg.Wait()
	return out
}

// writersCPU is all writers' CPU between two scrapes, % of one core; false unless every writer
// answered both.
func writersCPU(s0, s1 []nodemetrics.Sample) (float64, bool) {
	var sum float64
	for i := range s0 {
		if s0[i].At.IsZero() || s1[i].At.IsZero() {
			return 0, false
		}
		sum += nodemetrics.CPUPercent(s0[i], s1[i])
	}
	return sum, len(s0) > 0
}

// redisCPU returns Redis's CPU time so far, and false without --redis or when it cannot be read.
func (r *Ramp) redisCPU(ctx context.Context) (time.Duration, bool) {
	if r.redis == nil {
		return 0, false
	}
	cpu, err := r.redis.cpu(ctx)
	if err != nil {
		r.progress.line("loadgen: %v", err)
		return 0, false
	}
	return cpu, true
}

// redisIdleWindow is how long the ramp watches Redis before any load to learn its idle CPU.
const redisIdleWindow = time.Second

// idleRedisCPU returns Redis's CPU seconds per second over redisIdleWindow with no load, or NaN
// when it cannot be read (then nothing is left out of the phases' figures).
func (r *Ramp) idleRedisCPU(ctx context.Context) float64 {
	t0 := time.Now()
	c0, ok0 := r.redisCPU(ctx)
	select {
	case <-ctx.Done():
		return math.NaN()
	case <-time.After(redisIdleWindow):
	}
	c1, ok1 := r.redisCPU(ctx)
	if !ok0 || !ok1 {
		return math.NaN()
	}
	return (c1 - c0).Seconds() / time.Since(t0).Seconds()
}

// rss returns a sample's RSS, NaN for a failed scrape.
func rss(s nodemetrics.Sample) float64 {
	if s.At.IsZero() {
		return math.NaN()
	}
	return s.RSSBytes
}

package ramp

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/likes/likes/loadgen/internal/worker"
)

// pool is the worker processes of a ramp and how many viewers each was given.
type pool struct {
	cfg     *Config
	init    worker.Init
	stderr  io.Writer
	clients []*worker.Client
	viewers []int
	next    int // next global viewer index
}

func newPool(cfg *Config, posts []string, stderr io.Writer) *pool {
	return &pool{cfg: cfg, stderr: stderr, init: worker.Init{
		Nodes:         cfg.Nodes,
		Sources:       cfg.Sources,
		Posts:         posts,
		Feed:          cfg.Feed,
		ReadBuffer:    cfg.ReadBuffer,
		DialTimeoutMS: int(cfg.ConnectTimeout.Milliseconds()),
		Reconnect:     cfg.Storm != nil,
	}}
}

// connect starts workers as needed for total viewers, spreads the new viewers so that every
// worker holds about the same number, and asks each to connect its share at its part of rate.
func (p *pool) connect(total int, rate float64) error {
	need := (total + p.cfg.PerWorker - 1) / p.cfg.PerWorker
	for len(p.clients) < need {
		name := fmt.Sprintf("worker-%d", len(p.clients)+1)
		c, err := worker.Start(name, p.cfg.WorkerExe, p.cfg.WorkerArgs, p.stderr)
		if err != nil {
			return err
		}
		p.clients = append(p.clients, c)
		p.viewers = append(p.viewers, 0)
		if _, err := c.Call(worker.Request{Op: worker.OpInit, Init: &p.init}); err != nil {
			return err
		}
	}
	adds := spread(p.viewers, total)
	added := total - sum(p.viewers)
	for i, n := range adds {
		if n == 0 {
			continue
		}
		share := 0.0
		if rate > 0 {
			share = rate * float64(n) / float64(added)
		}
		req := worker.Request{Op: worker.OpConnect, Connect: &worker.Connect{First: p.next, Count: n, Rate: share}}
		if _, err := p.clients[i].Call(req); err != nil {
			return err
		}
		p.next += n
		p.viewers[i] += n
	}
	return nil
}

// spread returns how many viewers to add to each worker so that they hold total between them,
// as evenly as possible, never taking any away: each new viewer goes to the least loaded worker.
func spread(have []int, total int) []int {
	adds := make([]int, len(have))
	for missing := total - sum(have); missing > 0; missing-- {
		low := 0
		for i := range have {
			if have[i]+adds[i] < have[low]+adds[low] {
				low = i
			}
		}
		adds[low]++
	}
	return adds
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// all sends a request to every worker at once and returns their replies in order.
func (p *pool) all(req worker.Request) ([]worker.Reply, error) {
	replies := make([]worker.Reply, len(p.clients))
	errs := make([]error, len(p.clients))
	var wg sync.WaitGroup
	for i, c := range p.clients {
		wg.Go(func() { replies[i], errs[i] = c.Call(req) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return replies, err
		}
	}
	return replies, nil
}

// status sums the workers' counters; CPU and memory are summed too.
func (p *pool) status() (worker.Status, error) {
	replies, err := p.all(worker.Request{Op: worker.OpStatus})
	var total worker.Status
	if err != nil {
		return total, err
	}
	total.Errors = map[string]int{}
	for _, r := range replies {
		s := r.Status
		total.Wanted += s.Wanted
		total.Pending += s.Pending
		total.Open += s.Open
		total.Failed += s.Failed
		total.Refused += s.Refused
		total.Dropped += s.Dropped
		total.Events += s.Events
		total.Watching += s.Watching
		total.Malformed += s.Malformed
		total.CPUMicros += s.CPUMicros
		total.PrivateBytes += s.PrivateBytes
		total.Moved += s.Moved
		total.MovedOpen += s.MovedOpen
		if s.MovedFirstUS > 0 && (total.MovedFirstUS == 0 || s.MovedFirstUS < total.MovedFirstUS) {
			total.MovedFirstUS = s.MovedFirstUS
		}
		total.MovedCurrentUS = max(total.MovedCurrentUS, s.MovedCurrentUS)
		for k, n := range s.Errors {
			total.Errors[k] += n
		}
		if total.NoFileSoft == 0 || s.NoFileSoft < total.NoFileSoft {
			total.NoFileSoft = s.NoFileSoft
		}
	}
	return total, nil
}

// close stops every worker, each within a bounded time.
func (p *pool) close() {
	var wg sync.WaitGroup
	for _, c := range p.clients {
		wg.Go(func() { _ = c.Close(15 * time.Second) })
	}
	wg.Wait()
}

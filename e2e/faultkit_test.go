package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
)

// Signal sends sig to the process (SIGSTOP/SIGCONT to freeze it, as a long pause would).
func (p *Proc) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		t.Fatalf("%s is not running", p.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", p.Name, err)
	}
}

// PID is the running process's id, for a command outside the test that signals it.
func (p *Proc) PID(t testing.TB) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		t.Fatalf("%s is not running", p.Name)
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the process has exited (or was stopped by the test).
func (p *Proc) Exited() bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Metric reads one unlabelled sample from the process's /metrics.
func (p *Proc) Metric(t testing.TB, name string) float64 {
	t.Helper()
	v, err := clienttest.ScrapeMetric(p.URL, name)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	return v
}

// likeMany sends n likes of post by distinct users (prefix-0 ... prefix-(n-1)), parallel at a
// time, and fails the test unless every one was counted.
func likeMany(t testing.TB, writerURL, post, prefix string, n, parallel int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	next := atomic.Int64{}
	for range parallel {
		wg.Add(1)
		go func() { // exits when all n likes are sent
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				status, r, err := clienttest.TryLike(writerURL, post, prefix+"-"+strconv.FormatInt(i, 10))
				if err != nil || status != http.StatusOK || !r.Liked {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d liked=%v err=%v", status, r.Liked, err))
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d likes failed, first: %v", f, n, firstErr.Load())
	}
}

// healthProbe polls a URL's /healthz at a fixed pace and keeps the worst latency and the failures.
type healthProbe struct {
	stop     context.CancelFunc
	done     chan struct{}
	worst    atomic.Int64 // nanoseconds
	failures atomic.Int64
	probes   atomic.Int64
}

// startHealthProbe polls baseURL/healthz every interval, over one kept-alive connection (the
// node's request handling) or over a new connection each time (also the accept queue, as an
// orchestrator's probe sees it).
func startHealthProbe(baseURL string, every time.Duration, newConns bool) *healthProbe {
	ctx, cancel := context.WithCancel(context.Background())
	h := &healthProbe{stop: cancel, done: make(chan struct{})}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: newConns}}
	go func() { // exits when Stop cancels ctx
		defer close(h.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			start := time.Now()
			resp, err := client.Get(baseURL + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			took := time.Since(start)
			h.probes.Add(1)
			if err != nil || resp.StatusCode != http.StatusOK {
				h.failures.Add(1)
			}
			for old := h.worst.Load(); int64(took) > old && !h.worst.CompareAndSwap(old, int64(took)); old = h.worst.Load() {
			}
		}
	}()
	return h
}

// Stop ends the probe and returns the worst latency, failures and probes.
func (h *healthProbe) Stop() (time.Duration, int64, int64) {
	h.stop()
	<-h.done
	return time.Duration(h.worst.Load()), h.failures.Load(), h.probes.Load()
}

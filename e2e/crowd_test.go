package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// Crowd is thousands of lean SSE viewers of one post, for tests that need more viewers than the
// http.Client-based Viewer affords (that one costs three goroutines and ~12 KiB of buffers each).
// A crowd viewer is one goroutine on a raw TCP connection whose response is read through a small
// buffer; it reconnects like a browser's EventSource: after the retry delay the server sent, with
// Last-Event-ID. The crowd tallies each viewer's newest count, its connects, any update that went
// backwards, and (while Measure is on) the delivery latency of every event from its ts.
type Crowd struct {
	post    string
	addrs   []string
	viewers []*crowdViewer
	Latency *latencyHist
	measure atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// crowdViewer is one viewer. Atomics are read by the test; lastID and retry belong to its goroutine.
type crowdViewer struct {
	addr      string
	count     atomic.Int64 // -1 until the first event
	connects  atomic.Int64
	failures  atomic.Int64 // dials, writes or non-200 answers that did not give a stream
	backwards atomic.Int64
	connected atomic.Bool
	status    atomic.Int64 // last HTTP status
	ts        int64
	lastID    string
	retry     time.Duration
}

// crowdStartParallel bounds the dials in flight while a crowd first connects, so that starting a
// crowd measures the node, not the listen backlog. Reconnects are not bounded: a storm is a storm.
const crowdStartParallel = 128

// StartCrowd connects n viewers of post, viewer i to addrs[i%len(addrs)], and waits until all hold
// a stream (within timeout). They are disconnected when the test ends.
func StartCrowd(t testing.TB, addrs []string, post string, n int, timeout time.Duration) *Crowd {
	t.Helper()
	c := &Crowd{post: post, addrs: addrs, Latency: &latencyHist{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(c.Close)
	gate := make(chan struct{}, crowdStartParallel)
	for i := range n {
		v := &crowdViewer{addr: addrs[i%len(addrs)], retry: time.Second}
		v.count.Store(-1)
		c.viewers = append(c.viewers, v)
		c.wg.Add(1)
		go func() { // exits when Close cancels the crowd's context
			defer c.wg.Done()
			c.run(v, gate)
		}()
	}
	c.WaitConnected(t, timeout)
	return c
}

// Close disconnects every viewer for good and waits for their goroutines.
func (c *Crowd) Close() {
	c.cancel()
	c.wg.Wait()
}

// Measure turns latency recording on or off (and clears the histogram when turning it on).
func (c *Crowd) Measure(on bool) {
	if on {
		c.Latency.Reset()
	}
	c.measure.Store(on)
}

func (c *Crowd) run(v *crowdViewer, gate chan struct{}) {
	for c.ctx.Err() == nil {
		if gate != nil {
			gate <- struct{}{}
		}
		c.session(v, gate)
		gate = nil
		v.connected.Store(false)
		select {
		case <-c.ctx.Done():
		case <-time.After(v.retry):
		}
	}
}

// session holds one stream until it ends. gate, when set, is released once the head is read.
func (c *Crowd) session(v *crowdViewer, gate chan struct{}) {
	release := func() {
		if gate != nil {
			<-gate
			gate = nil
		}
	}
	defer release()
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(c.ctx, "tcp", v.addr)
	if err != nil {
		v.failures.Add(1)
		return
	}
	stop := context.AfterFunc(c.ctx, func() { _ = conn.Close() })
	defer func() {
		stop()
		_ = conn.Close()
	}()
	req := "GET /sse/" + c.post + " HTTP/1.1\r\nHost: " + v.addr + "\r\nAccept: text/event-stream\r\n"
	if v.lastID != "" {
		req += "Last-Event-ID: " + v.lastID + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		v.failures.Add(1)
		return
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		v.failures.Add(1)
		return
	}
	defer resp.Body.Close()
	v.status.Store(int64(resp.StatusCode))
	if resp.StatusCode != http.StatusOK {
		v.failures.Add(1)
		return
	}
	v.connects.Add(1)
	v.connected.Store(true)
	release()
	var dec sse.Decoder
	buf := make([]byte, 512)
	emit := func(e *sse.Event) { c.handle(v, e) }
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && dec.Feed(buf[:n], emit) != nil {
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *Crowd) handle(v *crowdViewer, e *sse.Event) {
	if e.Retry >= 0 {
		v.retry = time.Duration(e.Retry) * time.Millisecond
	}
	if e.HasID {
		v.lastID = string(e.ID)
	}
	if string(e.Event) != sse.EventCount {
		return
	}
	count, ts, err := update.ParseCount(e.Data)
	if err != nil {
		return
	}
	if c.measure.Load() {
		c.Latency.Add(time.Duration(time.Now().UnixMicro()-ts) * time.Microsecond)
	}
	if ts <= v.ts {
		v.backwards.Add(1)
		return
	}
	v.ts = ts
	v.count.Store(count)
}

// WaitConnected waits until every viewer holds a stream.
func (c *Crowd) WaitConnected(t testing.TB, timeout time.Duration) {
	t.Helper()
	c.waitAll(t, timeout, "viewers to connect", func(v *crowdViewer) bool { return v.connected.Load() })
}

// WaitCount waits until every viewer shows want, and returns how long that took.
func (c *Crowd) WaitCount(t testing.TB, timeout time.Duration, want int64) time.Duration {
	t.Helper()
	return c.waitAll(t, timeout, "viewers to show "+strconv.FormatInt(want, 10),
		func(v *crowdViewer) bool { return v.count.Load() == want })
}

// WaitAtLeast waits until every viewer shows want or more (for counts that keep moving).
func (c *Crowd) WaitAtLeast(t testing.TB, timeout time.Duration, want int64) time.Duration {
	t.Helper()
	return c.waitAll(t, timeout, "viewers to show at least "+strconv.FormatInt(want, 10),
		func(v *crowdViewer) bool { return v.count.Load() >= want })
}

func (c *Crowd) waitAll(t testing.TB, timeout time.Duration, what string, ok func(*crowdViewer) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		missing, example := 0, -1
		for i, v := range c.viewers {
			if !ok(v) {
				missing++
				if example < 0 {
					example = i
				}
			}
		}
		if missing == 0 {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			v := c.viewers[example]
			t.Fatalf("timed out after %v waiting for %s: %d of %d not there (e.g. viewer %d: connected=%v count=%d status=%d failures=%d)",
				timeout, what, missing, len(c.viewers), example, v.connected.Load(), v.count.Load(), v.status.Load(), v.failures.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Connects returns the streams opened by all viewers so far.
func (c *Crowd) Connects() int64 {
	var n int64
	for _, v := range c.viewers {
		n += v.connects.Load()
	}
	return n
}

// Backwards returns the updates, over all viewers, that were not newer than what the viewer had.
func (c *Crowd) Backwards() int64 {
	var n int64
	for _, v := range c.viewers {
		n += v.backwards.Load()
	}
	return n
}

// Connected returns how many viewers hold a stream now.
func (c *Crowd) Connected() int {
	n := 0
	for _, v := range c.viewers {
		if v.connected.Load() {
			n++
		}
	}
	return n
}

// latencyHist is a fixed histogram of delivery latencies in 50 µs buckets up to 10 s, safe for
// concurrent use without locks.
type latencyHist struct {
	buckets [200_001]atomic.Int64
	total   atomic.Int64
}

const latencyBucket = 50 * time.Microsecond

func (h *latencyHist) Add(d time.Duration) {
	i := max(int(d/latencyBucket), 0)
	i = min(i, len(h.buckets)-1)
	h.buckets[i].Add(1)
	h.total.Add(1)
}

// Reset clears the histogram.
func (h *latencyHist) Reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.total.Store(0)
}

// Count returns the samples recorded.
func (h *latencyHist) Count() int64 { return h.total.Load() }

// Quantile returns the upper edge of the bucket holding quantile q.
func (h *latencyHist) Quantile(q float64) time.Duration {
	total := h.total.Load()
	if total == 0 {
		return 0
	}
	rank := int64(q * float64(total))
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen > rank {
			return time.Duration(i+1) * latencyBucket
		}
	}
	return time.Duration(len(h.buckets)) * latencyBucket
}

func (h *latencyHist) String() string {
	return fmt.Sprintf("n=%d p50=%v p99=%v p999=%v", h.Count(), h.Quantile(0.5), h.Quantile(0.99), h.Quantile(0.999))
}

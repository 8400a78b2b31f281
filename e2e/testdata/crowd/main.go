// Command crowd holds thousands of SSE viewers for the e2e fault tests, in a process of its own:
// built without the race detector (a race-instrumented client costs about 1 ms of CPU per connect,
// too much for a 15,000-viewer storm on two cores) and with its own 20,000 open-file budget.
//
// Each viewer is one goroutine on a raw TCP connection, reading its response through a small
// buffer, and reconnects like a browser's EventSource: after the last retry: delay the server sent,
// with Last-Event-ID. The test drives it over stdin, one command per line, each answered with one
// JSON line on stdout:
//
//	status       {"viewers":..,"connected":..,"connects":..,"failures":..,"dial_failures":..,"refusals":..,"backwards":..,"counts":{"<count>":<viewers>},"samples":..,"p50_us":..,"p99_us":..,"p999_us":..}
//	measure on   start recording delivery latency (event receipt minus its ts), cleared
//	measure off  stop recording
//
// End of stdin closes every viewer and exits.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
	"github.com/likes/likes/pkg/update"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	addrs := flag.String("addrs", "", "comma-separated host:port of the nodes; viewer i uses addrs[i % len]")
	path := flag.String("path", "", "stream path, e.g. /sse/42")
	n := flag.Int("n", 1, "viewers")
	parallel := flag.Int("parallel", 128, "dials in flight while the crowd first connects")
	flag.Parse()
	if *addrs == "" || *path == "" || *n < 1 {
		return fmt.Errorf("usage: crowd -addrs host:port[,host:port] -path /sse/post -n N")
	}
	c := newCrowd(strings.Split(*addrs, ","), *path, *n)
	c.start(*parallel)
	defer c.close()
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var reply any
		switch cmd := strings.TrimSpace(in.Text()); cmd {
		case "status":
			reply = c.status()
		case "measure on":
			c.lat.reset()
			c.measure.Store(true)
			reply = map[string]bool{"ok": true}
		case "measure off":
			c.measure.Store(false)
			reply = map[string]bool{"ok": true}
		default:
			reply = map[string]string{"error": "unknown command " + strconv.Quote(cmd)}
		}
		if err := out.Encode(reply); err != nil {
			return err
		}
	}
	return in.Err()
}

type crowd struct {
	addrs   []string
	path    string
	viewers []*viewer
	lat     hist
	measure atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// viewer is one stream. Atomics are read by status; ts, lastID and retry belong to its goroutine.
type viewer struct {
	addr      string
	count     atomic.Int64 // -1 until the first event
	connects  atomic.Int64
	failures  atomic.Int64
	dialFails atomic.Int64
	refusals  atomic.Int64 // answers other than 200
	backwards atomic.Int64
	connected atomic.Bool
	ts        int64
	lastID    string
	retry     time.Duration
}

func newCrowd(addrs []string, path string, n int) *crowd {
	c := &crowd{addrs: addrs, path: path}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for i := range n {
		v := &viewer{addr: addrs[i%len(addrs)], retry: time.Second}
		v.count.Store(-1)
		c.viewers = append(c.viewers, v)
	}
	return c
}

// start runs every viewer; at most parallel of them dial at once until each has its first stream.
func (c *crowd) start(parallel int) {
	gate := make(chan struct{}, max(parallel, 1))
	for _, v := range c.viewers {
		c.wg.Add(1)
		go func() { // exits when close cancels the crowd's context
			defer c.wg.Done()
			c.run(v, gate)
		}()
	}
}

func (c *crowd) close() {
	c.cancel()
	c.wg.Wait()
}

func (c *crowd) run(v *viewer, gate chan struct{}) {
	for c.ctx.Err() == nil {
		if gate != nil {
			gate <- struct{}{}
		}
		if c.session(v, gate) {
			gate = nil // the first stream was had: reconnects are not throttled
		}
		v.connected.Store(false)
		select {
		case <-c.ctx.Done():
		case <-time.After(v.retry):
		}
	}
}

// session holds one stream until it ends and reports whether it got one. gate, when set, is
// released once the response head is read or the attempt failed.
func (c *crowd) session(v *viewer, gate chan struct{}) bool {
	release := func() {
		if gate != nil {
			<-gate
			gate = nil
		}
	}
	defer release()
	dctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	conn, err := sseclient.Dial(dctx, sseclient.Request{Addr: v.addr, Path: c.path, LastEventID: v.lastID, ReadSize: 512})
	cancel()
	if err != nil {
		v.failures.Add(1)
		if oe := (*net.OpError)(nil); errors.As(err, &oe) && oe.Op == "dial" {
			v.dialFails.Add(1)
		}
		return false
	}
	defer conn.Close()
	var se *sseclient.StatusError
	if err := conn.Head(c.ctx); errors.As(err, &se) {
		v.failures.Add(1)
		v.refusals.Add(1)
		if se.RetryAfter > 0 {
			v.retry = se.RetryAfter
		}
		return false
	} else if err != nil {
		v.failures.Add(1)
		return false
	}
	v.connects.Add(1)
	v.connected.Store(true)
	release()
	_ = conn.Run(c.ctx, func(e *sse.Event) { c.handle(v, e) })
	return true
}

func (c *crowd) handle(v *viewer, e *sse.Event) {
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
		c.lat.add(time.Now().UnixMicro() - ts)
	}
	if ts <= v.ts {
		v.backwards.Add(1)
		return
	}
	v.ts = ts
	v.count.Store(count)
}

// status is the crowd's state as the test reads it.
type status struct {
	Viewers   int              `json:"viewers"`
	Connected int              `json:"connected"`
	Connects  int64            `json:"connects"`
	Failures  int64            `json:"failures"`
	DialFails int64            `json:"dial_failures"`
	Refusals  int64            `json:"refusals"`
	Backwards int64            `json:"backwards"`
	Counts    map[string]int64 `json:"counts"`
	Samples   int64            `json:"samples"`
	P50us     int64            `json:"p50_us"`
	P99us     int64            `json:"p99_us"`
	P999us    int64            `json:"p999_us"`
}

func (c *crowd) status() status {
	s := status{Viewers: len(c.viewers), Counts: map[string]int64{}}
	for _, v := range c.viewers {
		if v.connected.Load() {
			s.Connected++
		}
		s.Connects += v.connects.Load()
		s.Failures += v.failures.Load()
		s.DialFails += v.dialFails.Load()
		s.Refusals += v.refusals.Load()
		s.Backwards += v.backwards.Load()
		s.Counts[strconv.FormatInt(v.count.Load(), 10)]++
	}
	s.Samples = c.lat.total.Load()
	s.P50us, s.P99us, s.P999us = c.lat.quantile(0.5), c.lat.quantile(0.99), c.lat.quantile(0.999)
	return s
}

// hist is a lock-free histogram of latencies in 50 µs buckets up to 10 s.
type hist struct {
	buckets [200_001]atomic.Int64
	total   atomic.Int64
}

const bucketUS = 50

func (h *hist) add(us int64) {
	i := min(max(us/bucketUS, 0), int64(len(h.buckets)-1))
	h.buckets[i].Add(1)
	h.total.Add(1)
}

func (h *hist) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.total.Store(0)
}

// quantile returns the upper edge, in microseconds, of the bucket holding quantile q.
func (h *hist) quantile(q float64) int64 {
	total := h.total.Load()
	if total == 0 {
		return 0
	}
	rank := int64(q * float64(total))
	var seen int64
	for i := range h.buckets {
		if seen += h.buckets[i].Load(); seen > rank {
			return int64(i+1) * bucketUS
		}
	}
	return int64(len(h.buckets)) * bucketUS
}

package hub

import (
	"sync/atomic"
	"time"
)

// Shed closes the viewers the hub holds now, spread evenly over window, each after a short
// jittered retry hint, as Drain does; but the hub stays open and viewers added after the call
// are kept. A node that lost Redis hears no updates: shedding sends its viewers, through the
// balancer, to nodes that still do, without stopping the node. A second Shed restarts the
// spread with the viewers present then. It returns at once; after Close it does nothing.
func (h *Hub) Shed(window time.Duration) {
	h.request(int64(max(window, time.Millisecond)))
}

// StopShedding keeps the viewers a Shed in progress has not closed yet (Redis came back: they
// are resynced where they are).
func (h *Hub) StopShedding() { h.request(stopShed) }

// request hands a shed request to every loop. h.mu is held so that Close, which takes it
// before stopping the loops, cannot close a loop's poller between the check and the wake.
func (h *Hub) request(r int64) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return
	}
	for _, s := range h.loops {
		s.shed.req.Store(r)
		s.wake()
	}
}

// stopShed is the request that ends a shed; a positive request is a window in nanoseconds.
const stopShed = -1

// shedder is one loop's shed. req is written by any goroutine; the rest belongs to the loop.
type shedder struct {
	req        atomic.Int64 // pending request: window (ns), stopShed, or 0 for none
	list       []*viewer    // the viewers present when the shed started, closed in this order
	done       int          // entries of list handled so far
	start, end int64        // the shed's window on the loop's clock
}

func (d *shedder) active() bool { return len(d.list) > 0 }

// shedStep takes a pending request and closes the share of the listed viewers due by now.
// It runs on the loop with the other timers; a viewer that left meanwhile is skipped.
func (s *loop) shedStep() {
	d := &s.shed
	if d.req.Load() != 0 { // a load first: this runs on every loop iteration
		r := d.req.Swap(0)
		clear(d.list)
		d.list, d.done = d.list[:0], 0
		if r > 0 {
			for _, v := range s.viewers {
				d.list = append(d.list, v)
			}
			d.start, d.end = s.now, s.now+r
		}
	}
	if !d.active() {
		return
	}
	due := len(d.list)
	if s.now < d.end {
		due = int(int64(len(d.list)) * (s.now - d.start) / (d.end - d.start))
	}
	for ; d.done < due; d.done++ {
		v := d.list[d.done]
		d.list[d.done] = nil
		if v.doomed || s.viewers[v.fd] != v {
			continue
		}
		s.sendAway(v)
	}
	if d.done == len(d.list) {
		d.list, d.done = d.list[:0], 0
	}
}

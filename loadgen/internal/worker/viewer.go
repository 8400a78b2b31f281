package worker

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
	"github.com/likes/likes/pkg/update"
)

// Viewer states.
const (
	statePending int32 = iota
	stateOpen
	stateFailed
	stateRefused
	stateDropped
)

// viewer is one SSE connection. Once registered with its loop, only the loop's goroutine touches
// fd, requested, stream and nowUS; other goroutines read the atomics. A worker holds up to 20,000
// of them and a million-viewer run 67 workers: the fields are ordered so that the struct fills a
// 320-byte size class with no padding (the bools together at the end), and its post is derived
// from its index rather than stored.
type viewer struct {
	w     *Worker
	index int // its global index; its (first) post is index mod posts
	node  int // index of its fanout node

	last []atomic.Int64 // newest count received of each post it follows; -1 before any
	// rx is the sum of the counts of the newest reactions event of its post (-1 before any);
	// reactions are measured on single-post streams only (a room is one post). frames are the
	// frames (count events) of the phase's window it received.
	rx     atomic.Int64
	frames atomic.Int64
	sample atomic.Pointer[arrivals] // the phase's record of its frames; nil: not sampled

	fd     int
	nowUS  int64
	emitFn func(*sse.Event) // v.emit, bound once so Feed does not allocate a closure per read
	stream sseclient.Stream

	state   atomic.Int32
	inPhase atomic.Bool // open when the current phase began: its deliveries are measured
	// moved: it replaced a viewer whose stream ended (Init.Reconnect). Its frames count as
	// deliveries but not in the latency histogram: the phase's latency is that of the viewers
	// who stayed, and the move's length is reported on its own.
	moved     bool
	requested bool // the request was sent
	seenCount bool // a count event came (read by the loop only)
}

// post is the viewer's (first) post.
func (v *viewer) post() int { return v.index % v.w.posts }

// shard is the viewer's latency histogram (and, modulo the loops, its loop).
func (v *viewer) shard() int { return v.index % latencyShards }

// received feeds bytes read from the socket.
func (v *viewer) received(p []byte) {
	v.nowUS = time.Now().UnixMicro()
	wasOpen := v.stream.Open()
	err := v.stream.Feed(p, v.emitFn)
	if !wasOpen && v.stream.Open() {
		v.w.opened(v)
	}
	if err != nil {
		v.w.loopOf(v).end(v, err)
	}
}

// ended records why a connection ended; the loop has closed it.
func (v *viewer) ended(err error) {
	var se *sseclient.StatusError
	switch {
	case v.state.Load() == stateOpen:
		switch {
		case v.w.closing.Load():
		case v.w.reconnect && !v.moved:
			v.w.move(v)
		default:
			v.w.dropped(v, reason(err))
		}
	case errors.As(err, &se) && se.Code == 503:
		v.fail(stateRefused, "")
	case errors.As(err, &se):
		v.fail(stateFailed, "status "+strconv.Itoa(se.Code))
	default:
		v.fail(stateFailed, reason(err))
	}
}

func (v *viewer) fail(state int32, why string) {
	if v.state.CompareAndSwap(statePending, state) {
		v.w.failed(state, why)
	}
}

// emit handles one event; it runs on the loop's goroutine and allocates nothing.
func (v *viewer) emit(e *sse.Event) {
	switch string(e.Event) {
	case sse.EventCount:
	case sse.EventReactions:
		v.reactions(e.Data)
		return
	case sse.EventWatching:
		v.w.watching.Add(1)
		return
	default:
		return
	}
	post, slot, count, ts, ok := v.parse(e.Data)
	if !ok {
		v.w.malformed.Add(1)
		return
	}
	// A moved viewer starts from the count its stream showed before the move: the snapshot its
	// new node sends first repeats it when nothing came meanwhile, and is no new delivery.
	seen := v.moved && count <= v.last[slot].Load()
	v.last[slot].Store(count)
	v.w.events.Add(1)
	if v.moved && !v.seenCount {
		v.seenCount = true
		v.w.movedCurrent(v.nowUS)
	}
	if ph := v.w.phase.Load(); ph != nil && v.inPhase.Load() && !seen {
		ph.record(post, v.shard(), count, ts, v.nowUS, !v.moved)
		if ts >= ph.startUS && ts < ph.endUS {
			v.frames.Add(1)
		}
		if a := v.sample.Load(); a != nil && ts >= ph.startUS {
			a.add(count, ts, v.nowUS)
		}
	}
}

// parse reads a count event: which post (and which of the viewer's slots) and its numbers. A
// single-post viewer knows its post; a feed viewer looks the id up (a map index with a []byte
// key converted in place does not allocate).
func (v *viewer) parse(data []byte) (post, slot int, count, ts int64, ok bool) {
	if len(v.last) == 1 {
		count, ts, err := update.ParseCount(data)
		return v.post(), 0, count, ts, err == nil
	}
	id, count, ts, err := update.SplitCount(data)
	if err != nil {
		return 0, 0, 0, 0, false
	}
	post, known := v.w.postIndex[string(id)]
	slot = (post - v.post() + v.w.posts) % v.w.posts
	if !known || slot >= len(v.last) {
		return 0, 0, 0, 0, false // a post this viewer does not follow
	}
	return post, slot, count, ts, true
}

// reactions handles a reactions event: the post's counts per kind, whose sum a single-post viewer
// keeps (a feed viewer only counts it). The frame's count event, just before it, was measured.
func (v *viewer) reactions(data []byte) {
	_, total, _, err := update.SplitReactions(data)
	if err != nil {
		v.w.malformed.Add(1)
		return
	}
	v.w.reactions.Add(1)
	if len(v.last) == 1 {
		v.rx.Store(total)
	}
}

// arrivals is a sampled viewer's frames, [count, ts, arrival] (ts and arrival in unix
// microseconds): its loop adds them, the worker copies them out for a report.
type arrivals struct {
	mu     sync.Mutex
	frames [][3]int64
}

// maxArrivals bounds one sampled viewer's record (about 2 hours at 100 frames a second).
const maxArrivals = 1 << 20

func (a *arrivals) add(count, ts, at int64) {
	a.mu.Lock()
	if len(a.frames) < maxArrivals {
		a.frames = append(a.frames, [3]int64{count, ts, at})
	}
	a.mu.Unlock()
}

func (a *arrivals) copy() [][3]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][3]int64(nil), a.frames...)
}

package likes

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/loadgen/internal/hist"
)

// Recorder keeps what the likes did: per post the highest acknowledged count (which, with fresh
// users, numbers the likes), and for acknowledgements inside the measurement window their number
// and latency.
type Recorder struct {
	maxCount []atomic.Int64 // per post
	acked    atomic.Int64
	errors   atomic.Int64
	skipped  atomic.Int64

	mu        sync.Mutex
	lastError string

	window atomic.Pointer[Window]
}

// Window is the likes acknowledged between Start and End.
type Window struct {
	Start, End time.Time
	Acked      atomic.Int64
	Errors     atomic.Int64
	Latency    hist.Histogram // microseconds

	mu   sync.Mutex
	acks []Ack
}

// Ack is a like or reaction acknowledged in the window: its post, the count in its answer (a
// fresh user's like: the post's count with it, which every frame from then on reaches), the
// version (TS) of the update that carries a reaction (0 for a like), and when its answer came
// (unix microseconds). A viewer has a like once a frame reaches its count, a reaction once a frame
// of its version or a later one arrives.
type Ack struct {
	Post             int
	Count, TS, AckUS int64
}

// Acks returns what was acknowledged in the window so far.
func (w *Window) Acks() []Ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Ack(nil), w.acks...)
}

// NewRecorder returns a recorder for posts posts.
func NewRecorder(posts int) *Recorder { return &Recorder{maxCount: make([]atomic.Int64, posts)} }

// SetWindow makes w receive the acknowledgements that fall within it.
func (r *Recorder) SetWindow(w *Window) { r.window.Store(w) }

// MaxCounts returns per post the highest count acknowledged so far.
func (r *Recorder) MaxCounts() []int64 {
	out := make([]int64, len(r.maxCount))
	for i := range r.maxCount {
		out[i] = r.maxCount[i].Load()
	}
	return out
}

// Totals returns likes acknowledged, failed, and skipped (open loop at its in-flight limit).
func (r *Recorder) Totals() (acked, errors, skipped int64) {
	return r.acked.Load(), r.errors.Load(), r.skipped.Load()
}

// LastError returns the most recent like error, if any.
func (r *Recorder) LastError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastError
}

// record records the answer to a like or reaction to post p: its error, or its count and (a
// reaction's) version ts.
func (r *Recorder) record(p int, count, ts int64, err error, start, end time.Time) {
	w := r.window.Load()
	in := w != nil && !end.Before(w.Start) && end.Before(w.End)
	if err != nil {
		r.errors.Add(1)
		if in {
			w.Errors.Add(1)
		}
		r.mu.Lock()
		r.lastError = err.Error()
		r.mu.Unlock()
		return
	}
	r.acked.Add(1)
	for {
		old := r.maxCount[p].Load()
		if count <= old || r.maxCount[p].CompareAndSwap(old, count) {
			break
		}
	}
	if in {
		w.Acked.Add(1)
		w.Latency.Record(end.Sub(start).Microseconds())
		w.mu.Lock()
		w.acks = append(w.acks, Ack{Post: p, Count: count, TS: ts, AckUS: end.UnixMicro()})
		w.mu.Unlock()
	}
}

package worker

import (
	"sync/atomic"
	"time"
)

// moves is a worker's reconnect storm (Init.Reconnect): the viewers whose stream ended wait here
// for a handshake slot and connect to another node, as a load balancer sends a lost node's
// viewers to the others. The loop goroutine that saw a stream end queues its replacement and
// never blocks; one goroutine of the worker's (run) connects them.
type moves struct {
	queue  chan *viewer // replacements, in the order their streams ended
	stop   chan struct{}
	n      atomic.Int64 // streams that ended and were moved
	open   atomic.Int64 // replacements admitted (200)
	first  atomic.Int64 // unix µs the first moved stream ended
	latest atomic.Int64 // unix µs the last admitted replacement got its first count
}

// maxQueuedMoves is the most replacements waiting at once: more than one worker's viewers.
const maxQueuedMoves = 1 << 16

func newMoves() *moves {
	return &moves{queue: make(chan *viewer, maxQueuedMoves), stop: make(chan struct{})}
}

// run connects queued replacements, each once it holds a handshake slot, until stop closes.
func (m *moves) run(w *Worker) {
	for {
		select {
		case <-m.stop:
			return
		case v := <-m.queue:
			select {
			case w.handshakes <- struct{}{}:
			case <-m.stop:
				return
			}
			w.start(v)
		}
	}
}

// move replaces v, whose stream ended, by a viewer of the same post on another node: the lost
// node's viewers spread evenly over the others (one node: the same node, as after its restart).
// The replacement takes v's place in the phase. Called on v's loop goroutine.
func (w *Worker) move(v *viewer) {
	if !v.state.CompareAndSwap(stateOpen, stateDropped) {
		return
	}
	w.open.Add(-1)
	w.moves.n.Add(1)
	w.moves.first.CompareAndSwap(0, time.Now().UnixMicro())
	next, nodes := v.node, len(w.targets)
	if nodes > 1 {
		next = (v.node + 1 + v.index/(w.posts*nodes)%(nodes-1)) % nodes
	}
	nv := w.newViewerAt(v.index, next)
	nv.moved = true
	for k := range v.last {
		nv.last[k].Store(v.last[k].Load())
	}
	nv.inPhase.Store(v.inPhase.Load())
	v.inPhase.Store(false)
	w.pending.Add(1)
	select {
	case w.moves.queue <- nv:
	default:
		nv.fail(stateFailed, "reconnect queue full")
	}
}

// movedCurrent records that a replacement got its first count at us (unix µs).
func (w *Worker) movedCurrent(us int64) {
	for {
		old := w.moves.latest.Load()
		if us <= old || w.moves.latest.CompareAndSwap(old, us) {
			return
		}
	}
}

package likes

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Open sends rate likes per second until ctx is done, at most maxInflight at once; a like that
// would exceed it is counted as skipped (the writer is not keeping up). It sends nothing that
// falls due after ctx's deadline, and returns when every like sent has been answered.
//
// A dispatcher (the calling goroutine) hands the likes as they fall due to connection goroutines,
// the most recently idle first. A like waiting for a free connection is in flight: its latency
// counts from when it fell due.
func (l *Load) Open(ctx context.Context, rate float64, maxInflight int) {
	maxInflight = max(maxInflight, 1)
	p := &openPool{}
	var inflight atomic.Int64
	reqCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for range min(l.maxConns, ceilDiv(maxInflight, l.pipeline)) {
		w := &openWorker{hand: make(chan job, 1)}
		p.idle = append(p.idle, w)
		wg.Go(func() { l.openWorker(reqCtx, p, w, &inflight) }) // exits when p is closed and drained
	}
	l.dispatch(ctx, rate, maxInflight, p, &inflight)
	p.close()
	wg.Wait()
}

// dispatch hands likes to p as they fall due, until ctx is done.
func (l *Load) dispatch(ctx context.Context, rate float64, maxInflight int, p *openPool, inflight *atomic.Int64) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			// A tick read after ctx's deadline (the loop was descheduled and select chose the
			// tick over Done) must not send what falls due after it.
			upTo := now
			if dl, ok := ctx.Deadline(); ok && upTo.After(dl) {
				upTo = dl
			}
			due := int(rate * upTo.Sub(start).Seconds())
			for ; sent < due; sent++ {
				if inflight.Load() >= int64(maxInflight) {
					l.rec.skipped.Add(1)
					continue
				}
				inflight.Add(1) // only here: the workers only take away
				j := job{post: sent % len(l.posts), start: now}
				if l.react != nil {
					l.react.assign(&j, sent, len(l.posts))
				}
				p.hand(j)
			}
		}
	}
}

// openPool passes an open loop's likes to its connection goroutines. Idle workers form a stack:
// the next like goes to the one idle for the shortest time, so a low rate keeps a few
// connections busy instead of cycling through all of them (a connection idle for idleRedial is
// redialled, so cycling would cost a dial per like). Likes due while every worker is busy wait
// in the backlog, which the workers drain before going idle.
type openPool struct {
	mu      sync.Mutex
	idle    []*openWorker // a stack: the last in is the next out
	backlog []job         // FIFO; at most the likes in flight
	head    int           // backlog[head:] are waiting
	closed  bool          // no more likes: workers exit when the backlog is empty
}

// openWorker is one connection goroutine's mailbox.
type openWorker struct {
	// hand carries a like to the worker once it is off the idle stack; it holds one, so handing
	// never blocks. Only the dispatcher's side sends on it (hand) and closes it (close), both
	// while the worker is on the idle stack.
	hand chan job
}

// hand gives j to the most recently idle worker, or queues it when all are busy.
func (p *openPool) hand(j job) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.hand <- j
		return
	}
	p.backlog = append(p.backlog, j)
	p.mu.Unlock()
}

// turn is what a worker does after asking the pool for more.
type turn int

const (
	sendBatch turn = iota // send the likes in the batch
	waitHand              // the worker is idle: wait on its hand
	stop                  // the pool is closed and drained: exit
)

// next fills batch (up to its capacity) from the backlog. With nothing to send it makes w idle,
// or tells it to stop when the pool is closed. Checking the backlog and going idle under one lock
// is what keeps a like from waiting beside an idle worker.
func (p *openPool) next(w *openWorker, batch []job) ([]job, turn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.head < len(p.backlog) && len(batch) < cap(batch) {
		batch = append(batch, p.backlog[p.head])
		p.head++
	}
	if p.head == len(p.backlog) {
		p.backlog, p.head = p.backlog[:0], 0
	}
	switch {
	case len(batch) > 0:
		return batch, sendBatch
	case p.closed:
		return batch, stop
	}
	p.idle = append(p.idle, w)
	return batch, waitHand
}

// close tells the workers that no more likes come: the idle ones exit now, the busy ones after
// the backlog.
func (p *openPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		close(w.hand)
	}
	p.idle = nil
}

// openWorker sends the likes it is handed (and, pipelining, more from the backlog) on one
// connection, dialled at its first like, until the pool is closed and drained.
func (l *Load) openWorker(ctx context.Context, p *openPool, w *openWorker, inflight *atomic.Int64) {
	var c *conn
	defer func() {
		if c != nil {
			l.putConn(c)
		}
	}()
	batch := make([]job, 0, l.pipeline)
	for j := range w.hand {
		if c == nil {
			c = l.getConn()
		}
		var next turn
		batch, next = p.next(w, append(batch[:0], j))
		for next == sendBatch {
			l.send(ctx, c, batch)
			inflight.Add(-int64(len(batch)))
			batch, next = p.next(w, batch[:0])
		}
		if next == stop {
			return
		}
	}
}

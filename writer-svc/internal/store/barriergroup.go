package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The gap (Options.ReadBarrierGap, READ_BARRIER_GAP) is the least time between the end of one
// read barrier on a primary and the start of the next. Reads that ask meanwhile queue for the next
// barrier and share it, so however many reads anyone sends, a primary gets at most one barrier (a
// SET and a WAIT, the SET written to its AOF and sent to its replicas) per round trip plus the gap
// from each writer. The default is no gap: one barrier in flight per primary already makes many
// reads share one, and a gap of 5 ms measured 0.70x the reads a second of no barrier sharing at
// all, with a 4x p99, where no gap gave 1.3x at the same p99 (docs/BENCHMARKS.md, "What a read
// costs"). A quiet read never waits for it: its barrier starts at once.

// errBarriersClosed is the answer to a read that asks for confirmation after the store closed.
var errBarriersClosed = errors.New("store closed")

// barrierCall runs one barrier: a write on a primary followed by a WAIT for acks replicas, which
// must answer by until; ctx ends at until or when the store closes.
type barrierCall func(ctx context.Context, until time.Time, acks int) error

// barriers is the group commit of read barriers, per primary: a read that needs confirmation
// joins the barrier that starts next on its primary, and one barrier confirms every read that
// joined it. Correctness rests on one invariant: a barrier's members are fixed (under mu) before
// its call is sent, and a read joins only once its data came back, so the barrier's SET is issued
// after every member's data was read and the WAIT covers it. A read that comes while a barrier
// is in flight therefore never joins that one: it joins the next, which starts when the one in
// flight has ended and the gap has passed. At most one barrier per primary is in flight and
// one queued.
//
// A barrier belongs to all its members, so it runs in a goroutine of its own (the primary's
// runner, run), on the store's context bounded by the latest member's deadline: a member whose
// request ends leaves alone, and the others still get the answer.
type barriers struct {
	life context.Context // ended by close: every call in flight gives up
	stop context.CancelFunc
	gap  time.Duration
	wg   sync.WaitGroup // the runners

	mu     sync.Mutex
	lanes  map[string]*lane // primaries with a barrier in flight, queued or within its gap
	closed bool
}

// lane is one primary's barriers: its runner exists while it is in the map.
type lane struct {
	next *barrier // the barrier that starts next; nil: none asked for
}

// barrier is one write and WAIT, and the reads it confirms.
type barrier struct {
	call    barrierCall // the first member's: any member's primary and key serve all
	acks    int         // the most any member needs
	until   time.Time   // the latest member's deadline: when the barrier's answer is no use to anyone
	waiting int         // members still waiting; none when it comes to start: it is skipped
	done    chan struct{}
	err     error // set before done is closed
}

func newBarriers(gap time.Duration) *barriers {
	life, stop := context.WithCancel(context.Background())
	return &barriers{life: life, stop: stop, gap: gap, lanes: map[string]*lane{}}
}

// confirm returns once a barrier on primary that started after confirm was called has been
// confirmed by acks replicas (nil), has failed (its error, the same for each member), or ctx has
// ended (ctx's error; the barrier goes on for the other members). call runs the barrier when this
// read is the first to ask for the next one.
func (b *barriers) confirm(ctx context.Context, primary string, acks int, call barrierCall) error {
	bar := b.join(ctx, primary, acks, call)
	select {
	case <-bar.done:
		return bar.err
	case <-ctx.Done():
		b.leave(bar)
		return ctx.Err()
	}
}

// join adds a read to the barrier that starts next on primary, starting primary's runner when it
// has none.
func (b *barriers) join(ctx context.Context, primary string, acks int, call barrierCall) *barrier {
	until, ok := ctx.Deadline()
	if !ok {
		until = time.Now().Add(readBarrierTimeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		bar := &barrier{done: make(chan struct{}), err: errBarriersClosed}
		close(bar.done)
		return bar
	}
	l := b.lanes[primary]
	if l == nil {
		l = &lane{}
		b.lanes[primary] = l
		b.wg.Add(1)
		go b.run(primary, l)
	}
	if l.next == nil {
		l.next = &barrier{call: call, done: make(chan struct{})}
	}
	bar := l.next
	bar.acks = max(bar.acks, acks)
	if until.After(bar.until) {
		bar.until = until
	}
	bar.waiting++
	return bar
}

// leave takes a member whose request ended out of bar's count.
func (b *barriers) leave(bar *barrier) {
	b.mu.Lock()
	bar.waiting--
	b.mu.Unlock()
}

// run is primary's runner: it runs the lane's barriers one after the other, the gap apart, and
// exits when none is queued at the end of a gap, or, once the store closes, after failing the
// queued one.
func (b *barriers) run(primary string, l *lane) {
	defer b.wg.Done()
	gap := time.NewTimer(0)
	defer gap.Stop()
	for {
		b.mu.Lock()
		bar := l.next
		l.next = nil // later reads join the barrier after this one
		if bar == nil {
			delete(b.lanes, primary)
			b.mu.Unlock()
			return
		}
		abandoned := bar.waiting == 0
		b.mu.Unlock()
		if !abandoned { // nobody to answer: no call
			bar.err = b.send(bar)
		}
		close(bar.done)
		gap.Reset(b.gap)
		select {
		case <-gap.C:
		case <-b.life.Done():
		}
	}
}

// send runs bar's call on the store's context, until the latest member's deadline.
func (b *barriers) send(bar *barrier) error {
	ctx, cancel := context.WithDeadline(b.life, bar.until)
	defer cancel()
	return bar.call(ctx, bar.until, bar.acks)
}

// close fails the barriers in flight and queued (their calls give up) and waits for the runners.
func (b *barriers) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.stop()
	b.wg.Wait()
}

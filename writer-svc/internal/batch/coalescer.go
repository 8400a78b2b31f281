package batch

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/writer-svc/internal/store"
)

// ErrBusy is returned for a change refused because its post already has a full queue: Redis is
// not keeping up with that post, and the client should retry later.
var ErrBusy = errors.New("too many likes of this post in flight")

// ErrClosed is returned for a change submitted after Close.
var ErrClosed = errors.New("like coalescer closed")

// ErrUnanswered wraps a failed call that Redis did not settle (store.Settled): a timeout or a
// lost connection once the call may have been sent. The script may have run before its deadline
// with its reply lost or its WAIT still blocked (a primary paused, cut off or killed mid-call, or
// a retry of the pipeline that reached a new primary late): its changes may have been applied, so
// their answer must not promise "not applied" (writerapi.Unconfirmed). Found by the partition
// suite: a like answered a plain 503 at its deadline was read back a moment later.
var ErrUnanswered = errors.New("storage did not answer in time: the change may have been applied")

// Options tune a Coalescer.
type Options struct {
	// Window is how long a post's next batch may wait for more changes once its call in flight
	// returns, counted from that return or from the batch's oldest change if older; 0 sends it as
	// soon as the call returns. A post is quiet when no call of it is in flight and none returned
	// within the window; a change that finds its post quiet never waits. The window keeps a busy
	// post busy between calls: without it, clients that answer in step (a closed loop) drain the
	// queue and each wave's first like goes alone.
	Window time.Duration
	// Size is the most changes in one script call, 1 to store.MaxBatch.
	Size int
	// Queue is the most changes waiting per post behind the call in flight; beyond, ErrBusy.
	// 0 means 4 x Size.
	Queue int
	// Timeout bounds one call's Redis work from when it leaves, for callers without a deadline of
	// their own (a call is otherwise bounded by its earliest caller's deadline).
	Timeout time.Duration
}

// Coalescer turns the likes and unlikes of each post into as few script calls as it can, by
// group commit: a change that finds its post quiet is sent at once, alone; changes that arrive
// while a call for their post is in flight (or within the window after it, see
// Options.Window) wait, in order, and go together in the next call.
// Batches form only when a post is busy, so they cost a quiet post nothing, and grow with load,
// which is what lets one Redis shard absorb a viral post. Each change still gets its own result,
// exactly as if it had run alone at its place in the batch.
//
// Each busy post has one flusher goroutine, so a post has at most one call in flight per writer
// and its batches reach Redis in arrival order. Posts are spread over lock stripes, never held
// across Redis I/O.
//
// A call belongs to all its requests, so it runs on a context of its own, never on one request's
// (a request that leaves does not fail the others), bounded by its requests' earliest deadline:
// the script refuses to run after that deadline, and a failure that may still land is answered
// only once that deadline has passed. A request answered 503 for passing its deadline therefore
// never has its change applied afterwards (see send).
type Coalescer struct {
	store   *store.Store
	o       Options
	metrics *Metrics
	seed    maphash.Seed
	quit    chan struct{} // closed by Close: lingering batches leave at once
	closing sync.Once
	wg      sync.WaitGroup // one per flusher
	stripes [stripeCount]stripe
}

// stripeCount spreads the posts' queues over this many locks.
const stripeCount = 64

// stripe is one lock and the queues of the posts that hash to it.
type stripe struct {
	mu     sync.Mutex
	closed bool
	posts  map[string]*postQueue
}

// postQueue is a busy post: it exists from the change that found the post quiet until its
// flusher finds nothing left to send, and only its flusher removes it.
type postQueue struct {
	waiting []*pending
	full    chan struct{} // 1-buffered: the queue holds a full batch while the flusher lingers
}

// pending is one request's change, waiting for its batch.
type pending struct {
	ctx    context.Context // the request's: a change whose request gave up is not sent; its deadline bounds the batch
	change store.Change
	at     time.Time    // when it was queued, with a window
	done   chan outcome // 1-buffered, so the flusher never blocks on a request that left
	// sent is set when the change joins a batch that goes to Redis: a request that gives up after
	// that cannot tell whether it was applied (ErrUnanswered).
	sent atomic.Bool
}

type outcome struct {
	res store.Result
	err error
}

// New returns a Coalescer that stores changes in st. Close it to stop. It checks the options
// itself, rather than trusting its callers: a batch above store.MaxBatch would fail every one of
// its calls, and a batch of 0 would never send anything.
func New(st *store.Store, o Options, m *Metrics) (*Coalescer, error) {
	switch {
	case o.Size < 1 || o.Size > store.MaxBatch:
		return nil, fmt.Errorf("batch size %d: want 1 to %d", o.Size, store.MaxBatch)
	case o.Window < 0:
		return nil, fmt.Errorf("batch window %s: want 0 or more", o.Window)
	case o.Timeout <= 0:
		return nil, fmt.Errorf("batch timeout %s: want more than 0", o.Timeout)
	}
	if o.Queue <= 0 {
		o.Queue = 4 * o.Size
	}
	c := &Coalescer{store: st, o: o, metrics: m, seed: maphash.MakeSeed(), quit: make(chan struct{})}
	for i := range c.stripes {
		c.stripes[i].posts = make(map[string]*postQueue)
	}
	return c, nil
}

// Like records that user likes post, once.
func (c *Coalescer) Like(ctx context.Context, post, user string) (store.Result, error) {
	return c.Submit(ctx, post, store.Change{User: user})
}

// Unlike removes user's like of post, if any.
func (c *Coalescer) Unlike(ctx context.Context, post, user string) (store.Result, error) {
	return c.Submit(ctx, post, store.Change{User: user, Unlike: true})
}

// React counts one reaction of kind to post by user, in post's next batch with its likes.
func (c *Coalescer) React(ctx context.Context, post, user, kind string) (store.Result, error) {
	return c.Submit(ctx, post, store.Change{User: user, Kind: kind})
}

// Close refuses new changes and waits until every batch already queued has been sent, without
// waiting out its window, and answered (each call is bounded by its deadline, at most the Timeout
// option).
func (c *Coalescer) Close() {
	c.closing.Do(func() {
		for i := range c.stripes {
			s := &c.stripes[i]
			s.mu.Lock()
			s.closed = true
			s.mu.Unlock()
		}
		close(c.quit)
	})
	c.wg.Wait()
}

// Submit queues one change and waits for its result or for ctx. A request that gives up first
// gets ctx's error (a 503), never a 200 for a change that might not be stored. When ctx's
// deadline is what ended it, the change cannot be stored afterwards either: ctx's deadline
// bounds its batch, in Redis too. A request cancelled before its deadline (its client left)
// does not stop the batch it is in: nobody reads its answer, and a retry is idempotent.
func (c *Coalescer) Submit(ctx context.Context, post string, ch store.Change) (store.Result, error) {
	if err := ctx.Err(); err != nil {
		return store.Result{}, err
	}
	p := &pending{ctx: ctx, change: ch, done: make(chan outcome, 1)}
	if c.o.Window > 0 {
		p.at = time.Now() // only the window needs it
	}
	if err := c.enqueue(post, p); err != nil {
		return store.Result{}, err
	}
	select {
	case o := <-p.done:
		return o.res, o.err
	case <-ctx.Done():
		if p.sent.Load() {
			// Its call may have run: only Redis' answer, which is not here yet, could say. (A
			// change taken just after this read was live then, but its batch's deadline is this
			// request's, past now, which the script refuses.)
			return store.Result{}, fmt.Errorf("wait for like batch: %w: %w", ErrUnanswered, ctx.Err())
		}
		return store.Result{}, fmt.Errorf("wait for like batch: %w", ctx.Err())
	}
}

func (c *Coalescer) enqueue(post string, p *pending) error {
	s := &c.stripes[maphash.String(c.seed, post)%stripeCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	q := s.posts[post]
	if q == nil {
		q = &postQueue{waiting: []*pending{p}, full: make(chan struct{}, 1)}
		s.posts[post] = q
		// Added under the stripe's lock, which Close takes before it waits: no Add after Wait.
		c.wg.Add(1)
		go c.flush(s, post, q) // exits when the post's queue is empty
		return nil
	}
	if len(q.waiting) >= c.o.Queue {
		c.metrics.QueueFull.Inc()
		return ErrBusy
	}
	q.waiting = append(q.waiting, p)
	if len(q.waiting) == c.o.Size {
		select {
		case q.full <- struct{}{}:
		default:
		}
	}
	return nil
}

// flush sends post's batches one call at a time until its queue is empty. The first batch is the
// change that found the post quiet, sent at once; each later one may gather for up to the window
// once the call before it returns.
func (c *Coalescer) flush(s *stripe, post string, q *postQueue) {
	defer c.wg.Done()
	var returned time.Time // when the last call returned; zero before the first
	for {
		batch := c.next(s, post, q, returned)
		if batch == nil {
			return
		}
		returned = c.send(post, batch)
	}
}

// next takes the next batch off q, or removes q and returns nil when nothing is left to send.
// Changes whose requests already gave up (answered 503), or are about to (see live), are dropped
// instead of sent. With a window, after a call the post stays busy: the next batch gathers until
// the window has passed since the call returned (or since its oldest change, if that is older),
// unless it fills first.
func (c *Coalescer) next(s *stripe, post string, q *postQueue, returned time.Time) []*pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.o.Window > 0 && !returned.IsZero() && len(q.waiting) < c.o.Size {
		from := returned
		if len(q.waiting) > 0 && q.waiting[0].at.Before(from) {
			from = q.waiting[0].at
		}
		if wait := c.o.Window - time.Since(from); wait > 0 {
			s.mu.Unlock()
			c.linger(wait, q.full)
			s.mu.Lock()
		}
	}
	now := time.Now()
	for len(q.waiting) > 0 {
		batch := make([]*pending, 0, min(len(q.waiting), c.o.Size))
		taken := 0
		for _, p := range q.waiting {
			if len(batch) == c.o.Size {
				break
			}
			taken++
			if p.live(now) {
				p.sent.Store(true)
				batch = append(batch, p)
			}
		}
		left := copy(q.waiting, q.waiting[taken:])
		clear(q.waiting[left:]) // the taken changes belong to the batch now
		q.waiting = q.waiting[:left]
		select {
		case <-q.full: // a stale signal from the batch just taken
		default:
		}
		if len(batch) > 0 {
			return batch
		}
	}
	delete(s.posts, post)
	return nil
}

// live reports whether p is worth sending at now: its request has not given up, and has more time
// left than the script's clock margin. With less, the script would refuse the whole batch,
// failing the changes beside it.
func (p *pending) live(now time.Time) bool {
	if p.ctx.Err() != nil {
		return false
	}
	d, ok := p.ctx.Deadline()
	return !ok || d.Sub(now) > store.ClockSkew
}

// linger waits for d, until the queue holds a full batch, or until Close.
func (c *Coalescer) linger(d time.Duration, full <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-full:
	case <-c.quit:
	}
}

// send runs one batch and answers each of its changes, and returns when the call returned (with
// a window), before any answer: the window after a call counts from there. A failed call
// fails every change in it: the script is atomic, so either all of them were stored or none.
//
// The call runs until the batch's deadline (see deadline), and so does the script's own check.
// A failure that Redis did not report itself (a lost connection, a timeout: see store.Settled)
// may have run already, or may still be on its way to Redis, to run later: its changes are
// answered only once the deadline has passed, when the script would refuse it, and with
// ErrUnanswered, since they may have been applied. Their requests' own deadlines end them then
// anyway; this holds the answer of those without one, and of a batch's later requests.
func (c *Coalescer) send(post string, batch []*pending) (returned time.Time) {
	changes := make([]store.Change, len(batch))
	for i, p := range batch {
		changes[i] = p.change
	}
	deadline := c.deadline(batch)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	res, err := c.store.Apply(ctx, post, changes)
	cancel()
	if err != nil && !store.Settled(err) {
		waitUntil(deadline)
		err = fmt.Errorf("%w: %w", ErrUnanswered, err)
	}
	if c.o.Window > 0 {
		returned = time.Now()
	}
	c.metrics.call(res, len(batch), err)
	for i, p := range batch {
		if err != nil {
			p.done <- outcome{err: err}
			continue
		}
		p.done <- outcome{res: res[i]}
	}
	return returned
}

// deadline is when batch's call must be over: its earliest request's deadline, so that no request
// is told 503 for a change that may still be stored, and at most the Timeout option from now,
// which bounds requests without a deadline.
func (c *Coalescer) deadline(batch []*pending) time.Time {
	d := time.Now().Add(c.o.Timeout)
	for _, p := range batch {
		if pd, ok := p.ctx.Deadline(); ok && pd.Before(d) {
			d = pd
		}
	}
	return d
}

// waitUntil returns at t. It does not return early on Close: the answers it holds back would be
// wrong before t, and t is at most the Timeout option away.
func waitUntil(t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	<-timer.C
}

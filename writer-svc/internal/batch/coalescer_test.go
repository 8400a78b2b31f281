package batch

import (
	"context"
	"errors"
	"hash/maphash"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestQuietPostNeverWaits: with a window of an hour, the like of a quiet post is sent at once;
// a post that was just liked stays busy for the window, so a like right behind waits to go with
// others (until Close here); and one window after its last call a post is quiet again.
func TestQuietPostNeverWaits(t *testing.T) {
	c, srv, _ := newCoalescer(t, Options{Window: time.Hour, Size: 10})
	for i := range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := c.Like(ctx, "quiet"+strconv.Itoa(i), "u")
		cancel()
		if err != nil || res != (store.Result{Count: 1, Changed: true}) {
			t.Fatalf("like of quiet post %d: %+v, %v; want count 1 at once, not after the window", i, res, err)
		}
	}
	calls := srv.ScriptCalls(t)
	behind := make(chan error, 1)
	go func() { _, err := c.Like(context.Background(), "quiet0", "right-behind"); behind <- err }()
	poll.Until(t, 10*time.Second, "the like right behind queued", func() bool { return c.waiting("quiet0") == 1 })
	if n := srv.ScriptCalls(t); n != calls {
		t.Fatalf("the like right behind was sent within the window (%d calls, want %d)", n, calls)
	}
	c.Close()
	if err := <-behind; err != nil {
		t.Fatalf("like right behind, at Close: %v", err)
	}

	short, _, _ := newCoalescer(t, Options{Window: 20 * time.Millisecond, Size: 10})
	if _, err := short.Like(context.Background(), "p", "u"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the post quiet again after the window", func() bool { return !short.busy("p") })
}

// TestCloseSendsLingeringBatches: a batch waiting out a long window when Close is called is
// sent at once, and Close returns once it is answered.
func TestCloseSendsLingeringBatches(t *testing.T) {
	c, srv, _ := newCoalescer(t, Options{Window: time.Hour, Size: 10})
	srv.HoldScripts(t)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { _, err := c.Like(context.Background(), "p", "first"); errs <- err })
	srv.AwaitHeldScript(t)
	wg.Go(func() { _, err := c.Like(context.Background(), "p", "behind"); errs <- err })
	poll.Until(t, 10*time.Second, "a like queued", func() bool { return c.waiting("p") == 1 })
	srv.ReleaseScripts(t)
	if err := <-errs; err != nil { // the first like; the second now lingers for the hour
		t.Fatalf("first like: %v", err)
	}
	c.Close()
	wg.Wait()
	if err := <-errs; err != nil {
		t.Errorf("like lingering at Close: %v; want stored", err)
	}
}

// TestLikesBehindACallGoTogether holds the first call of a post in Redis (CLIENT PAUSE) and
// queues more likes behind it: they go in batches of at most Size, each change answered with its
// own count, a full batch without waiting for the window.
func TestLikesBehindACallGoTogether(t *testing.T) {
	tests := []struct {
		name      string
		give      Options
		queued    int
		wantCalls int64
	}{
		{"full batch skips the window", Options{Window: time.Hour, Size: 4}, 4, 2},
		{"batches of at most size", Options{Size: 2}, 5, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv, m := newCoalescer(t, tt.give)
			calls := srv.ScriptCalls(t)
			srv.HoldScripts(t)
			results := make(chan store.Result, 1+tt.queued)
			like := func(user string) {
				res, err := c.Like(context.Background(), "hot", user)
				if err != nil {
					t.Errorf("like %s: %v", user, err)
				}
				results <- res
			}
			var wg sync.WaitGroup
			wg.Go(func() { like("first") })
			srv.AwaitHeldScript(t)
			for i := range tt.queued {
				wg.Go(func() { like("q" + strconv.Itoa(i)) })
			}
			poll.Until(t, 10*time.Second, "likes queued behind the call", func() bool { return c.waiting("hot") == tt.queued })
			srv.ReleaseScripts(t)
			wg.Wait()
			close(results)
			seen := map[int64]bool{}
			for res := range results {
				if !res.Changed || seen[res.Count] {
					t.Errorf("result %+v: want a new count", res)
				}
				seen[res.Count] = true
			}
			for n := int64(1); n <= int64(1+tt.queued); n++ {
				if !seen[n] {
					t.Errorf("no like answered count %d", n)
				}
			}
			if got := srv.ScriptCalls(t) - calls; got != tt.wantCalls {
				t.Errorf("%d script calls; want %d", got, tt.wantCalls)
			}
			if n, sum := histogram(t, m.BatchSize); n != uint64(tt.wantCalls) || sum != float64(1+tt.queued) {
				t.Errorf("batch size histogram: %d batches, %v changes; want %d and %d", n, sum, tt.wantCalls, 1+tt.queued)
			}
		})
	}
}

// TestFullQueueIsRefused: beyond Queue changes waiting, a post's likes get ErrBusy at once;
// the queued ones are still stored.
func TestFullQueueIsRefused(t *testing.T) {
	c, srv, m := newCoalescer(t, Options{Size: 1, Queue: 2})
	srv.HoldScripts(t)
	var wg sync.WaitGroup
	like := func(user string) {
		if _, err := c.Like(context.Background(), "hot", user); err != nil {
			t.Errorf("like %s: %v", user, err)
		}
	}
	wg.Go(func() { like("first") })
	srv.AwaitHeldScript(t)
	wg.Go(func() { like("q1") })
	wg.Go(func() { like("q2") })
	poll.Until(t, 10*time.Second, "two likes queued", func() bool { return c.waiting("hot") == 2 })
	if _, err := c.Like(context.Background(), "hot", "q3"); !errors.Is(err, ErrBusy) {
		t.Errorf("like beyond the queue: %v; want ErrBusy", err)
	}
	if got := counter(t, m.QueueFull); got != 1 {
		t.Errorf("queue full counter %v; want 1", got)
	}
	srv.ReleaseScripts(t)
	wg.Wait()
	if n, err := c.store.Count(context.Background(), "hot"); err != nil || n != 3 {
		t.Errorf("count %d, %v; want 3", n, err)
	}
}

// TestRequestThatGivesUp: requests that give up while their like is in Redis or queued get
// their context's error at once. A request cancelled (its client left) while its call is in
// flight does not stop the call: the like is stored, which is safe, since nobody reads that
// answer and a retry is idempotent. A queued like whose request was cancelled, or whose deadline
// passed, is not sent at all. (A call in flight past its deadline: see deadline_test.go.)
func TestRequestThatGivesUp(t *testing.T) {
	c, srv, _ := newCoalescer(t, Options{Size: 10})
	calls := srv.ScriptCalls(t)
	srv.HoldScripts(t)
	inFlight, cancelInFlight := context.WithCancel(context.Background())
	queued, cancelQueued := context.WithCancel(context.Background())
	expiring, cancelExpiring := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelExpiring()
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	wg.Go(func() { _, err := c.Like(inFlight, "p", "in-flight"); errs <- err })
	srv.AwaitHeldScript(t)
	wg.Go(func() { _, err := c.Like(queued, "p", "queued"); errs <- err })
	wg.Go(func() {
		_, err := c.Like(expiring, "p", "expiring")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("queued like past its deadline: %v; want context.DeadlineExceeded", err)
		}
	})
	poll.Until(t, 10*time.Second, "two likes queued", func() bool { return c.waiting("p") == 2 })
	cancelInFlight()
	cancelQueued()
	wg.Wait() // all answered while Redis still holds the call
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("like whose request was cancelled: %v; want context.Canceled", err)
		}
	}
	srv.ReleaseScripts(t)
	c.Close() // waits for the held batch
	rdb := srv.Client(t)
	ctx := context.Background()
	if n := rdb.Exists(ctx, storetest.Keys.User("p", "in-flight")).Val(); n != 1 {
		t.Error("the like in flight when its request was cancelled was not stored")
	}
	for _, user := range []string{"queued", "expiring"} {
		if n := rdb.Exists(ctx, storetest.Keys.User("p", user)).Val(); n != 0 {
			t.Errorf("queued like %q whose request had given up was stored", user)
		}
	}
	if got := srv.ScriptCalls(t) - calls; got != 1 {
		t.Errorf("%d script calls; want 1 (the queued likes not sent)", got)
	}
}

// TestBatchBoundedByEarliestDeadline: a batch's call lasts until its earliest request's
// deadline, not a fresh Timeout started when it leaves. Redis holds a batch of two likes, one
// with a deadline of half a second and one with none: both are answered with an error soon after
// that deadline (the Timeout is 30 s), and neither is stored.
func TestBatchBoundedByEarliestDeadline(t *testing.T) {
	c, srv, _ := newCoalescer(t, Options{Window: time.Hour, Size: 2})
	if _, err := c.Like(context.Background(), "p", "first"); err != nil { // the post is busy now
		t.Fatal(err)
	}
	srv.HoldScripts(t)
	soon, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { _, err := c.Like(soon, "p", "soon"); errs <- err })
	wg.Go(func() { _, err := c.Like(context.Background(), "p", "undated"); errs <- err })
	srv.AwaitHeldScript(t) // the two went as one full batch
	start := time.Now()
	wg.Wait()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("batch answered after %s; want soon after its earliest deadline (500ms)", took)
	}
	close(errs)
	for err := range errs {
		if err == nil {
			t.Error("a like of the held batch answered without error")
		}
	}
	srv.ReleaseScripts(t)
	c.Close()
	rdb := srv.Client(t)
	for _, user := range []string{"soon", "undated"} {
		if n := rdb.Exists(context.Background(), storetest.Keys.User("p", user)).Val(); n != 0 {
			t.Errorf("like %q of a batch answered with an error was stored", user)
		}
	}
}

// TestCloseWaitsForBatches: Close refuses new changes and returns only after the batch in
// flight has been answered.
func TestCloseWaitsForBatches(t *testing.T) {
	c, srv, _ := newCoalescer(t, Options{Size: 10})
	srv.HoldScripts(t)
	answered := make(chan error, 1)
	go func() { // exits when the like is answered
		_, err := c.Like(context.Background(), "p", "u")
		answered <- err
	}()
	srv.AwaitHeldScript(t)
	closed := make(chan struct{})
	go func() { // exits when Close returns
		c.Close()
		close(closed)
	}()
	poll.Until(t, 10*time.Second, "Close refusing changes", c.refusing)
	select {
	case <-closed:
		t.Fatal("Close returned while a batch was in flight")
	case err := <-answered:
		t.Fatalf("like answered (%v) while Redis held it", err)
	default:
	}
	if _, err := c.Like(context.Background(), "p", "late"); !errors.Is(err, ErrClosed) {
		t.Errorf("like after Close: %v; want ErrClosed", err)
	}
	srv.ReleaseScripts(t)
	if err := <-answered; err != nil {
		t.Errorf("like in flight at Close: %v; want stored", err)
	}
	<-closed
}

// TestNewChecksOptions: the coalescer refuses options it cannot work with itself, not
// only the writer's config: a batch size outside 1 to store.MaxBatch, a negative window, no timeout.
func TestNewChecksOptions(t *testing.T) {
	s := store.New(nil, storetest.Keys, store.Options{}) // never called: no batch is sent
	m := NewMetrics(prometheus.NewRegistry(), "test")
	tests := []struct {
		name   string
		give   Options
		wantOK bool
	}{
		{"size 1", Options{Size: 1, Timeout: time.Second}, true},
		{"size store.MaxBatch", Options{Size: store.MaxBatch, Timeout: time.Second}, true},
		{"size 0", Options{Size: 0, Timeout: time.Second}, false},
		{"size negative", Options{Size: -1, Timeout: time.Second}, false},
		{"size above store.MaxBatch", Options{Size: store.MaxBatch + 1, Timeout: time.Second}, false},
		{"negative window", Options{Size: 1, Window: -time.Millisecond, Timeout: time.Second}, false},
		{"no timeout", Options{Size: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(s, tt.give, m)
			if (err == nil) != tt.wantOK {
				t.Errorf("New(%+v): %v; want ok %v", tt.give, err, tt.wantOK)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

// newCoalescer returns a Coalescer on a fresh Redis, closed when the test ends.
func newCoalescer(t *testing.T, o Options) (*Coalescer, *redistest.Server, *Metrics) {
	t.Helper()
	srv := redistest.Start(t)
	c, m := coalescerOn(t, srv.Addr, o)
	return c, srv, m
}

// coalescerOn returns a Coalescer on the Redis at addr, with the client settings the writer runs
// with (pkg/redisconn: go-redis' retries, a request's deadline bounding its call) and its script
// loaded, closed when the test ends. The Timeout option defaults to 30 s.
func coalescerOn(t *testing.T, addr string, o Options) (*Coalescer, *Metrics) {
	t.Helper()
	return coalescerWith(t, addr, o, store.Options{})
}

// coalescerWith is coalescerOn with a store of its own options.
func coalescerWith(t *testing.T, addr string, o Options, so store.Options) (*Coalescer, *Metrics) {
	t.Helper()
	s := storetest.StoreOn(t, addr, so)
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	c, err := New(s, o, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, m
}

// busy reports whether post has a flusher: a call in flight, changes queued, or the window after
// its last call still open.
func (c *Coalescer) busy(post string) bool {
	s := &c.stripes[maphash.String(c.seed, post)%stripeCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts[post] != nil
}

// waiting returns how many changes of post are queued behind its call in flight.
func (c *Coalescer) waiting(post string) int {
	for i := range c.stripes {
		s := &c.stripes[i]
		s.mu.Lock()
		q := s.posts[post]
		n := 0
		if q != nil {
			n = len(q.waiting)
		}
		s.mu.Unlock()
		if n > 0 {
			return n
		}
	}
	return 0
}

// refusing reports whether Close has begun.
func (c *Coalescer) refusing() bool {
	s := &c.stripes[stripeCount-1]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func histogram(t *testing.T, h prometheus.Histogram) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

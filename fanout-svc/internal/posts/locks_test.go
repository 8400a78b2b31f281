package posts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

var errRefused = errors.New("refused")

// strictSubscriber stands in for Redis and checks what the registry promises its Subscriber: at
// most one subscription per post, and never a Subscribe and an Unsubscribe of the same post in
// flight at once. Every failEvery-th Subscribe is refused (0: none). Both calls yield halfway, so
// that the registry's other paths run while they are in flight.
type strictSubscriber struct {
	failEvery int

	mu         sync.Mutex
	state      map[string]string // post -> subscribing, subscribed or unsubscribing; absent: none
	calls      int
	violations []string
}

func newStrictSubscriber(failEvery int) *strictSubscriber {
	return &strictSubscriber{failEvery: failEvery, state: map[string]string{}}
}

func (s *strictSubscriber) Subscribe(_ context.Context, post string) error {
	s.mu.Lock()
	if st, ok := s.state[post]; ok {
		s.violations = append(s.violations, fmt.Sprintf("Subscribe of %s while %s", post, st))
	}
	s.state[post] = "subscribing"
	s.calls++
	refuse := s.failEvery > 0 && s.calls%s.failEvery == 0
	s.mu.Unlock()
	runtime.Gosched()
	s.mu.Lock()
	defer s.mu.Unlock()
	if refuse {
		delete(s.state, post)
		return errRefused
	}
	s.state[post] = "subscribed"
	return nil
}

func (s *strictSubscriber) Unsubscribe(ids []string) {
	s.mu.Lock()
	for _, id := range ids {
		if st := s.state[id]; st != "subscribed" {
			s.violations = append(s.violations, fmt.Sprintf("Unsubscribe of %s while %q", id, st))
		}
		s.state[id] = "unsubscribing"
	}
	s.mu.Unlock()
	runtime.Gosched()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.state, id)
	}
}

// subscribes returns how many Subscribe calls there were.
func (s *strictSubscriber) subscribes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// subscribed returns the posts subscribed in "Redis" now, with their state.
func (s *strictSubscriber) subscribed() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.state)
}

// verify fails t with every broken promise.
func (s *strictSubscriber) verify(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.violations {
		t.Error(v)
	}
}

// runPaths runs every path that takes the registry's locks (the map's, a post's subscription's,
// the unsubscriber's, a post's ring's) at once over ids, rounds times each, until stop is closed
// (nil: never): viewers subscribing and leaving, viewers giving up while their subscription is in
// flight, connects that must not wait (AcquireKnown), updates and resynced states offered to live
// posts (Receiving, Offer, SetKnown), loops reading frames (Since) and watching numbers, and the
// watching counter and the metrics (LocalViewers, Subscriptions). A refused subscription
// (errRefused), a closed registry and a subscription Close cancelled are expected answers. It returns when every path has.
func runPaths(t *testing.T, r *Registry, ids []string, rounds int, stop <-chan struct{}) {
	expected := func(err error) bool { // refused, or closed (and cancelled by Close while in flight)
		return errors.Is(err, errRefused) || errors.Is(err, errClosed) || errors.Is(err, context.Canceled)
	}
	var wg sync.WaitGroup
	run := func(worker func(i int)) {
		wg.Add(1)
		go func() { // exits after rounds, or once stop is closed
			defer wg.Done()
			for i := range rounds {
				select {
				case <-stop:
					return
				default:
				}
				worker(i)
			}
		}()
	}
	for w := range 4 { // viewers: subscribe, hold, leave
		run(func(i int) {
			some := []string{ids[(w+i)%len(ids)], ids[(w+2*i+1)%len(ids)]}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ps, err := r.Acquire(ctx, some)
			if err != nil {
				if !expected(err) {
					t.Errorf("acquire %v: %v", some, err)
				}
				return
			}
			r.Release(ps)
		})
	}
	run(func(i int) { // viewers that give up at once: their subscriptions go on without them
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if ps, err := r.Acquire(ctx, []string{ids[(3*i)%len(ids)]}); err == nil {
			r.Release(ps)
		} else if !expected(err) {
			t.Errorf("acquire with a cancelled context: %v", err)
		}
	})
	run(func(i int) { // connects served on a loop
		if ps, ok := r.AcquireKnown([]string{ids[i%len(ids)], ids[(i+1)%len(ids)]}); ok {
			r.Release(ps)
		}
	})
	for w := range 2 { // updates from the relay, and resynced states with SetKnown
		run(func(i int) {
			for _, id := range ids {
				if p := r.Receiving(id); p != nil {
					p.Offer(NewFrame(update.Update{PostID: id, Count: int64(i), TS: int64(2*i + w + 1)}))
					if i%8 == 0 {
						p.SetKnown()
					}
				}
			}
		})
	}
	run(func(i int) { // loops reading frames, and watching numbers
		for _, id := range ids {
			if p := r.Lookup(id); p != nil {
				p.Since(0, nil)
				old := p.Watching()
				p.SwapWatching(old, NewWatchFrame(update.Watching{PostID: id, Watching: int64(i), TS: int64(i)}))
			}
		}
	})
	run(func(int) { // the watching counter and the metrics
		r.LocalViewers(func(post string, viewers int) {
			if viewers <= 0 {
				t.Errorf("LocalViewers: %s with %d viewers", post, viewers)
			}
		})
		if n := r.Subscriptions(); n < 0 || n > len(ids) {
			t.Errorf("%d subscriptions over %d posts", n, len(ids))
		}
	})

	done := make(chan struct{})
	go func() { // exits when every path has
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the paths did not finish within 60 s: a deadlock (see fanout-svc/LOCKS.md)")
	}
}

// TestConcurrentPathsKeepTheLockOrder runs every path of the registry at once (runPaths) over a
// few shared posts, unsubscribed after a 1 ms grace so that subscriptions come and go throughout,
// one in seven refused, while one steady viewer holds two of the posts. Under -race a data race
// fails it; a lock taken against the order of fanout-svc/LOCKS.md shows as a deadlock, which the
// deadline turns into a failure. The subscriber sees one subscription per post at a time, and at
// the end the reference counts and subscriptions are exactly the steady viewer's.
func TestConcurrentPathsKeepTheLockOrder(t *testing.T) {
	sub := newStrictSubscriber(7)
	r := startRegistry(t, Config{UnsubscribeGrace: time.Millisecond}, sub)
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%d", i)
	}
	var steady []*Post
	poll.Until(t, 10*time.Second, "the steady viewer subscribed", func() bool {
		ps, err := r.Acquire(context.Background(), ids[:2])
		steady = ps
		return err == nil
	})

	runPaths(t, r, ids, 500, nil)

	poll.Until(t, 10*time.Second, "every other subscription gone", func() bool { return r.Subscriptions() == 2 })
	got := map[string]int{}
	r.LocalViewers(func(post string, viewers int) { got[post] = viewers })
	if want := map[string]int{ids[0]: 1, ids[1]: 1}; !maps.Equal(got, want) {
		t.Errorf("local viewers %v; want %v (the steady viewer's)", got, want)
	}
	want := map[string]string{ids[0]: "subscribed", ids[1]: "subscribed"}
	poll.Until(t, 10*time.Second, "only the steady viewer's posts subscribed in Redis", func() bool { return maps.Equal(sub.subscribed(), want) })
	r.Release(steady)
	poll.Until(t, 10*time.Second, "every subscription gone", func() bool { return r.Subscriptions() == 0 })
	poll.Until(t, 10*time.Second, "every post unsubscribed in Redis", func() bool { return len(sub.subscribed()) == 0 })
	sub.verify(t)
}

// TestCloseWhileEveryPathRuns closes the registry while its paths run (runPaths): Close takes the
// map's lock and each post's subscription lock and cancels the subscriptions in flight while
// viewers arrive and leave. Every path returns (a deadlock fails at the deadline), a viewer
// arriving after Close is refused, and the registry leaves no goroutine behind (goleak).
func TestCloseWhileEveryPathRuns(t *testing.T) {
	sub := newStrictSubscriber(5)
	r := New(Config{UnsubscribeGrace: time.Millisecond}, sub)
	ids := []string{"c0", "c1", "c2", "c3"}
	stop := make(chan struct{})
	paths := make(chan struct{})
	go func() { // exits when runPaths has
		defer close(paths)
		runPaths(t, r, ids, 1_000_000, stop)
	}()
	poll.Until(t, 10*time.Second, "subscriptions under way", func() bool { return sub.subscribes() >= 20 })
	r.Close()
	close(stop)
	<-paths
	if _, err := r.Acquire(context.Background(), ids[:1]); !errors.Is(err, errClosed) {
		t.Errorf("acquire after Close: %v; want %v", err, errClosed)
	}
	if _, ok := r.AcquireKnown(ids[:1]); ok {
		t.Error("AcquireKnown after Close held a post")
	}
	sub.verify(t)
}

package posts

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// TestConcurrentPathsKeepTheLockOrder runs every path that takes the registry's lock or a post's
// at once, over a few shared posts: viewers subscribing and leaving (unsubscribed after a 1 ms
// grace, so that subscriptions come and go throughout), connects that must not wait
// (AcquireKnown), updates and resynced states offered to live posts (Receiving, Offer, SetKnown),
// loops reading frames (Since) and watching numbers, and the watching counter (LocalViewers).
// Under -race a data race fails it; a lock taken against the order of fanout-svc/LOCKS.md shows
// as a deadlock, which the deadline turns into a failure. Every subscription is gone at the end.
func TestConcurrentPathsKeepTheLockOrder(t *testing.T) {
	r := startRegistry(t, Config{UnsubscribeGrace: time.Millisecond}, newSlowSubscriber(0))
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%d", i)
	}
	const rounds = 500
	var wg sync.WaitGroup
	run := func(worker func(i int)) {
		wg.Add(1)
		go func() { // exits after rounds
			defer wg.Done()
			for i := range rounds {
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
				t.Errorf("acquire %v: %v", some, err)
				return
			}
			r.Release(ps)
		})
	}
	run(func(i int) { // connects served on a loop
		if ps, ok := r.AcquireKnown([]string{ids[i%len(ids)]}); ok {
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
		r.LocalViewers(func(string, int) {})
		r.Subscriptions()
	})

	done := make(chan struct{})
	go func() { // exits when every worker has
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the paths did not finish within 60 s: a deadlock (see fanout-svc/LOCKS.md)")
	}
	poll.Until(t, 10*time.Second, "every subscription gone", func() bool { return r.Subscriptions() == 0 })
}

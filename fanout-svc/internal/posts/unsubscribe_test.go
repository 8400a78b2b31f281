package posts

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

// TestUnsubscribesAreBatchedAndBounded: when the viewers of 10,000 posts leave while every
// UNSUBSCRIBE takes Redis 300 ms, the node clears them in a few batched calls, a bounded number in
// flight, within seconds (one post per call, one call at a time, would take 50 minutes).
func TestUnsubscribesAreBatchedAndBounded(t *testing.T) {
	sub := newSlowSubscriber(300 * time.Millisecond)
	r := startRegistry(t, Config{UnsubscribeGrace: 20 * time.Millisecond}, sub)
	const n = 10_000
	var held [][]*Post
	for i := 0; i < n; i += MaxPosts {
		ids := make([]string, 0, MaxPosts)
		for j := i; j < min(i+MaxPosts, n); j++ {
			ids = append(ids, fmt.Sprintf("p%d", j))
		}
		ps, err := r.Acquire(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ps)
	}
	for _, ps := range held {
		r.Release(ps)
	}
	poll.Until(t, 60*time.Second, "every post unsubscribed", func() bool { _, _, done := sub.unsubscribes(); return done == n })
	calls, peak, _ := sub.unsubscribes()
	if want := n/unsubscribeBatch + 2*unsubscribers; calls > want {
		t.Errorf("%d Unsubscribe calls for %d posts; want at most %d (batches of %d)", calls, n, want, unsubscribeBatch)
	}
	if peak > unsubscribers {
		t.Errorf("%d Unsubscribe calls in flight at once; want at most %d", peak, unsubscribers)
	}
	if got := r.Subscriptions(); got != 0 {
		t.Errorf("%d subscriptions left; want 0", got)
	}
}

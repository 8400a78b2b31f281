package relay

import (
	"context"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestSingleDeliversAndResyncsAfterRestart covers the single-server path: a published update
// reaches the sink, and after Redis restarts the relay resubscribes by itself and re-reads the
// post, delivering a change that was stored but never published (the missed-update case).
func TestSingleDeliversAndResyncsAfterRestart(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	client := srv.Client(t)
	rel, sink := startRelay(t, client)
	subscribe(t, rel, "a")

	ctx := context.Background()
	payload := store(t, client, "a", 1, 100)
	if err := client.Publish(ctx, keys.Channel("a"), payload).Err(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "count 1 of post a", func() bool { return sink.has("a", 1) })

	store(t, client, "a", 5, 500) // stored, not published: only a resync can deliver it
	srv.Restart()
	poll.Until(t, 15*time.Second, "resynced count 5 of post a", func() bool { return sink.has("a", 5) })
	if rel.Stats().Reconnects.Load() == 0 {
		t.Error("Reconnects = 0 after a Redis restart; want > 0")
	}
	payload = store(t, client, "a", 6, 600)
	if err := client.Publish(ctx, keys.Channel("a"), payload).Err(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "count 6 after restart", func() bool { return sink.has("a", 6) })
	poll.Until(t, 10*time.Second, "Healthy", rel.Healthy)
}

// TestSingleUnsubscribeStopsDelivery checks that after one Unsubscribe of several posts Redis has
// no subscriber left for their channels, and still has one for the post that stays.
func TestSingleUnsubscribeStopsDelivery(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	rel, _ := startRelay(t, client)
	for _, p := range []string{"b", "c", "d"} {
		subscribe(t, rel, p)
	}
	ctx := context.Background()
	numsub := func(post string) int64 {
		return client.PubSubNumSub(ctx, keys.Channel(post)).Val()[keys.Channel(post)]
	}
	if got := numsub("b"); got != 1 {
		t.Fatalf("subscribers of b after Subscribe = %d; want 1", got)
	}
	rel.Unsubscribe([]string{"b", "c"})
	poll.Until(t, 5*time.Second, "no subscriber of b or c", func() bool { return numsub("b") == 0 && numsub("c") == 0 })
	if got := numsub("d"); got != 1 {
		t.Errorf("subscribers of d after unsubscribing b and c = %d; want 1", got)
	}
}

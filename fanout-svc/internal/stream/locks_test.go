package stream

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestSubscribeUnsubscribeResyncTogether runs, through a real relay and redis-server, every path
// that takes the node's subscription locks at once (fanout-svc/LOCKS.md): viewers arriving and
// leaving (SUBSCRIBE, and UNSUBSCRIBE after a 1 ms grace), updates published to them, and
// resyncs (the node's pub/sub connection is killed again and again, so the relay resubscribes and
// re-reads every post). Under -race a data race fails it, and a lock taken out of order shows as
// a deadlock, which the deadline turns into a failure. Then every steady viewer converges on the
// final state.
func TestSubscribeUnsubscribeResyncTogether(t *testing.T) {
	rs := redistest.Start(t)
	client := rs.Client(t)
	n := startNode(t, client, Config{}, posts.Config{UnsubscribeGrace: time.Millisecond})
	ids := []string{"lk0", "lk1", "lk2", "lk3"}
	steady := make([]*watcher, len(ids))
	for i, id := range ids {
		steady[i] = watch(t, n.URL+"/sse/"+id)
		poll.Until(t, 20*time.Second, "the steady viewer's snapshot", func() bool { _, ok := steady[i].last(id); return ok })
	}

	var wg sync.WaitGroup
	for c := range 4 { // viewers arriving and leaving
		wg.Add(1)
		go func() { // exits after its rounds
			defer wg.Done()
			for i := range 15 {
				id := ids[(c+i)%len(ids)]
				w := watch(t, n.URL+"/sse/"+id)
				err := poll.For(20*time.Second, func() error {
					if _, ok := w.last(id); !ok {
						return fmt.Errorf("viewer %d, round %d: no snapshot of %s", c, i, id)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
				}
				w.stop()
				<-w.done
			}
		}()
	}
	wg.Add(1)
	go func() { // updates, and a resync after every 25 of them
		defer wg.Done()
		ctx := context.Background()
		for i := int64(1); i <= 200; i++ {
			id := ids[i%int64(len(ids))]
			if err := client.Publish(ctx, testKeys.Channel(id), update.Update{PostID: id, Count: i, TS: i}.AppendJSON(nil)).Err(); err != nil {
				t.Errorf("publish: %v", err)
				return
			}
			if i%25 == 0 {
				if _, err := rs.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
					t.Errorf("kill the pub/sub connection: %v", err)
					return
				}
			}
		}
	}()
	done := make(chan struct{})
	go func() { // exits when every path has
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("the paths did not finish within 90 s: a deadlock (see fanout-svc/LOCKS.md)")
	}

	// The final state is in Redis before it is published: a message lost to a reconnect is read
	// back by the resync that follows it.
	const final = 1000
	for _, id := range ids {
		if err := client.MSet(context.Background(), testKeys.Count(id), final, testKeys.Version(id), final).Err(); err != nil {
			t.Fatal(err)
		}
		publish(t, client, update.Update{PostID: id, Count: final, TS: final})
	}
	for i, id := range ids {
		poll.Until(t, 20*time.Second, fmt.Sprintf("the steady viewer of %s at the final count", id), func() bool { return steady[i].has(id, final) })
	}
	if n.Relay.Stats().Resyncs.Load() == 0 {
		t.Error("no post was resynced; want the killed pub/sub connections to have made the relay re-read them")
	}
	if got := n.Posts.Subscriptions(); got != len(ids) {
		t.Errorf("%d subscriptions with one steady viewer on each of %d posts; want %d", got, len(ids), len(ids))
	}
}

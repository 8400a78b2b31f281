package stream

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestSubscribeUnsubscribeResyncTogether runs, through a real relay and redis-server, every path
// that takes the node's subscription locks at once (fanout-svc/LOCKS.md: the registry's post map,
// each post's subscription, the unsubscriber's queue, the relay's): viewers arriving and leaving
// (SUBSCRIBE, and UNSUBSCRIBE after a 1 ms grace), viewers giving up while their subscription is
// in flight, updates published to them, resyncs (the node's pub/sub connection is killed again and
// again, so the relay resubscribes and re-reads every post), and the watching counter reading the
// reference counts. Under -race a data race fails it, and a lock taken out of order shows as a
// deadlock, which the deadline turns into a failure. Then every steady viewer converges on the
// final state, Redis holds exactly one subscription per post, and none once they leave.
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
	gone := []string{"gone0", "gone1", "gone2"} // posts of the viewers that give up
	stopReaders := make(chan struct{})
	readers := make(chan struct{})
	go func() { // the watching counter and the metrics, every millisecond until the paths end
		defer close(readers)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopReaders:
				return
			case <-tick.C:
			}
			n.Posts.LocalViewers(func(post string, viewers int) {
				if viewers <= 0 {
					t.Errorf("LocalViewers: %s with %d viewers", post, viewers)
				}
			})
			if got, most := n.Posts.Subscriptions(), len(ids)+len(gone); got > most {
				t.Errorf("%d subscriptions over %d posts", got, most)
			}
		}
	}()
	wg.Add(1)
	go func() { // viewers that give up while their subscription is in flight
		defer wg.Done()
		for i := range 200 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*100*time.Microsecond)
			if held, err := n.Posts.Acquire(ctx, gone[i%len(gone):][:1]); err == nil {
				n.Posts.Release(held)
			}
			cancel()
		}
	}()
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
	close(stopReaders)
	<-readers

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
	poll.Until(t, 10*time.Second, "only the steady viewers' posts subscribed", func() bool { return n.Posts.Subscriptions() == len(ids) })
	poll.Check(t, 10*time.Second, func() error { return subscribersInRedis(client, ids, 1) })
	for _, w := range steady {
		w.stop()
		<-w.done
	}
	poll.Until(t, 10*time.Second, "every subscription gone once the steady viewers left", func() bool { return n.Posts.Subscriptions() == 0 })
	poll.Check(t, 10*time.Second, func() error { return subscribersInRedis(client, ids, 0) })
}

// subscribersInRedis checks that every post's channel has want subscribers in Redis (PUBSUB
// NUMSUB).
func subscribersInRedis(client redis.UniversalClient, ids []string, want int64) error {
	chs := make([]string, len(ids))
	for i, id := range ids {
		chs[i] = testKeys.Channel(id)
	}
	got, err := client.PubSubNumSub(context.Background(), chs...).Result()
	if err != nil {
		return err
	}
	for _, ch := range chs {
		if got[ch] != want {
			return fmt.Errorf("%s has %d subscribers in Redis; want %d", ch, got[ch], want)
		}
	}
	return nil
}

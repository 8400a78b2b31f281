package store_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestLateStatesArePublishedOnceConfirmed: three posts each get a like that its replica does not
// confirm (it is down): ErrNotReplicated, and nothing is published while it stays down, however
// many passes the late publisher makes. Once the replica is back, every post's state is published,
// count 1, without a retry.
func TestLateStatesArePublishedOnceConfirmed(t *testing.T) {
	const posts = 3
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	rdb := primary.Client(t)
	s := store.New(rdb, storetest.Keys, store.Options{AckReplicas: 1})
	t.Cleanup(s.Close)
	ps := rdb.PSubscribe(context.Background(), storetest.Keys.Channel("late-*"))
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := ps.Channel()

	replica.Kill()
	for i := range posts {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.Like(ctx, "late-"+strconv.Itoa(i), "alice")
		cancel()
		if !errors.Is(err, store.ErrNotReplicated) {
			t.Fatalf("like of late-%d with the replica down: %v; want ErrNotReplicated", i, err)
		}
	}
	waits := primary.CommandCalls(t, "wait")
	poll.Until(t, 10*time.Second, "two of the late publisher's passes", func() bool {
		return primary.CommandCalls(t, "wait") >= waits+2
	})
	select {
	case m := <-msgs:
		t.Fatalf("published %s before the replica confirmed it", m.Payload)
	default:
	}

	replica.Restart()
	replica.WaitReplicating(t)
	seen := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for len(seen) < posts {
		select {
		case m := <-msgs:
			u, err := update.Parse([]byte(m.Payload))
			if err != nil || u.Count != 1 {
				t.Fatalf("published %s; want count 1", m.Payload)
			}
			seen[u.PostID] = true
		case <-deadline:
			t.Fatalf("%d of %d posts published within 10 s of the replica's return", len(seen), posts)
		}
	}
}

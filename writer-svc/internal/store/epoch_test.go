package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestPublishedStatesCarryTheEpoch follows a post through a promotion that discards a like: the
// new primary's next state is published with epoch 1, so that it orders after the discarded one
// (package epoch) even though the new primary's count is lower. Before the promotion the state
// carries no epoch: its bytes are what they were before epochs.
func TestPublishedStatesCarryTheEpoch(t *testing.T) {
	ctx := context.Background()
	a := redistest.Start(t)
	b := redistest.StartReplica(t, a)
	ac, bc := a.Client(t), b.Client(t)
	sa := store.New(ac, storetest.Keys, store.Options{})
	msgs := storetest.Subscribe(t, ac, storetest.Keys.Channel("e"))
	if _, err := sa.Like(ctx, "e", "alice"); err != nil {
		t.Fatal(err)
	}
	first := storetest.Receive(t, msgs).Payload
	if strings.Contains(first, "epoch") {
		t.Errorf("published %s before any failover; want no epoch", first)
	}
	if err := bc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Like(ctx, "e", "bob"); err != nil { // on the old primary: the promotion discards it
		t.Fatal(err)
	}
	lost, _ := update.Parse([]byte(storetest.Receive(t, msgs).Payload))

	sb := store.New(bc, storetest.Keys, store.Options{})
	onB := storetest.Subscribe(t, bc, storetest.Keys.Channel("e"))
	if _, err := sb.React(ctx, "e", "carol", "clap"); err != nil {
		t.Fatal(err)
	}
	next, err := update.Parse([]byte(storetest.Receive(t, onB).Payload))
	if err != nil || next.Epoch != 1 || next.Count != 1 {
		t.Fatalf("the new primary published %+v, %v; want count 1 (bob's like discarded) in epoch 1", next, err)
	}
	if !next.Newer(lost) {
		t.Errorf("the new primary's state %+v does not order after the discarded %+v", next, lost)
	}
}

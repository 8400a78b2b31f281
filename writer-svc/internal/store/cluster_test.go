package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestClusterModeUsesShardedPublish runs the scripts on a one-node Redis Cluster that owns every
// slot: the four storetest.Keys must hash to one slot (or Redis refuses the script with CROSSSLOT) and the
// update must arrive on a sharded subscription (SPUBLISH), not a classic one.
func TestClusterModeUsesShardedPublish(t *testing.T) {
	rdb := storetest.OneNodeCluster(t)
	ctx := context.Background()
	s := store.New(rdb, storetest.Keys, store.Options{Cluster: true})
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ps := rdb.SSubscribe(ctx, storetest.Keys.Channel("42"))
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Like(ctx, "42", "alice"); err != nil || res != (store.Result{Count: 1, Changed: true}) {
		t.Fatalf("Like: %+v, %v; want count 1 changed", res, err)
	}
	u, err := update.Parse([]byte(storetest.Receive(t, ps.Channel()).Payload))
	if err != nil || u.PostID != "42" || u.Count != 1 {
		t.Errorf("sharded message: %+v, %v; want post 42 count 1", u, err)
	}

	// With a replica to wait for, the script and WAIT go to the post's master (this node has no
	// replica): the like is stored there and not confirmed.
	acked := store.New(rdb, storetest.Keys, store.Options{Cluster: true, AckReplicas: 1})
	t.Cleanup(acked.Close) // its late publisher (late.go)
	soon, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := acked.Like(soon, "42", "bob"); !errors.Is(err, store.ErrNotReplicated) {
		t.Errorf("like waiting for a replica the cluster lacks: %v; want store.ErrNotReplicated", err)
	}
	if n := rdb.Exists(ctx, storetest.Keys.User("42", "bob")).Val(); n != 1 {
		t.Error("the unconfirmed like is not on the master")
	}
}

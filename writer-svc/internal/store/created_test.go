package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestScriptAnnouncesCreationOnce: a post's first change, a like or a reaction, is announced on
// the creations channel (rediskeys.Created under the store's prefix) with the post id; later
// changes are not. The messages arrive in order, so the reaction's announcement right after the
// like's shows that the second like announced nothing.
func TestScriptAnnouncesCreationOnce(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	keys := rediskeys.New("app:x:")
	s := store.New(rdb, keys, store.Options{})
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	created := storetest.Subscribe(t, rdb, "app:x:created")
	if _, err := s.Like(ctx, "fresh", "alice"); err != nil {
		t.Fatal(err)
	}
	if m := storetest.Receive(t, created); m.Payload != "fresh" {
		t.Fatalf("announced %q; want fresh", m.Payload)
	}
	if _, err := s.Like(ctx, "fresh", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.React(ctx, "reacted", "alice", "clap"); err != nil {
		t.Fatal(err)
	}
	if m := storetest.Receive(t, created); m.Payload != "reacted" {
		t.Fatalf("announced %q after a second like of fresh and a first reaction to reacted; want reacted", m.Payload)
	}
	if _, err := s.Unlike(ctx, "never", "alice"); err != nil { // changes nothing: no version, no creation
		t.Fatal(err)
	}
	if _, err := s.Like(ctx, "later", "alice"); err != nil {
		t.Fatal(err)
	}
	if m := storetest.Receive(t, created); m.Payload != "later" {
		t.Fatalf("announced %q after an unlike that changed nothing; want later", m.Payload)
	}
}

// TestScriptAnnouncesCreationToEveryClusterNode: on a 3-master Cluster the script publishes the
// creation with a classic PUBLISH, which a subscriber on every node hears, whichever master ran
// the script.
func TestScriptAnnouncesCreationToEveryClusterNode(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cc := c.Client(t)
	ctx := context.Background()
	s := store.New(cc, storetest.Keys, store.Options{Cluster: true})
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ch := storetest.Keys.Created()
	subs := make([]<-chan *redis.Message, len(c.Nodes))
	for i, n := range c.Nodes {
		subs[i] = storetest.Subscribe(t, n.Client(t), ch)
	}
	owned := make([]string, len(c.Nodes)) // a post owned by each master
	for i := 0; i < 1000; i++ {
		post := "p" + strconv.Itoa(i)
		if n := c.Index(c.NodeFor(storetest.Keys.Count(post))); owned[n] == "" {
			owned[n] = post
		}
	}
	for _, post := range owned {
		if _, err := s.Like(ctx, post, "alice"); err != nil {
			t.Fatalf("like %s: %v", post, err)
		}
		for i, sub := range subs {
			if m := storetest.Receive(t, sub); m.Payload != post {
				t.Fatalf("node %d (%s) heard %q; want %s (owner %s)", i, c.Nodes[i].Addr, m.Payload, post, c.NodeFor(storetest.Keys.Count(post)).Addr)
			}
		}
	}
}

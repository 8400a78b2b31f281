package relay

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// postsPerNode finds n posts whose channels hash to each node of c, in distinct slots.
func postsPerNode(t *testing.T, c *redistest.Cluster, n int) [][]string {
	t.Helper()
	out := make([][]string, len(c.Nodes))
	slots := map[int]bool{}
	for i := 0; i < 10000; i++ {
		post := "p" + itoa(i)
		slot := keySlot(keys.Channel(post))
		if slots[slot] {
			continue
		}
		node := c.Index(c.NodeFor(keys.Channel(post)))
		if len(out[node]) < n {
			out[node] = append(out[node], post)
			slots[slot] = true
		}
		done := true
		for _, ps := range out {
			done = done && len(ps) == n
		}
		if done {
			return out
		}
	}
	t.Fatalf("could not find %d posts per node", n)
	return nil
}

// subscribeAll subscribes rel to each post.
func subscribeAll(t *testing.T, rel *Relay, posts ...string) {
	t.Helper()
	for _, p := range posts {
		subscribe(t, rel, p)
	}
}

// shardedSubscribers returns how many clients of node n are subscribed to the sharded channel ch.
func shardedSubscribers(t *testing.T, n *redistest.Server, ch string) int64 {
	t.Helper()
	res, err := n.Do("PUBSUB", "SHARDNUMSUB", ch)
	if err != nil {
		t.Fatalf("PUBSUB SHARDNUMSUB on %s: %v", n.Addr, err)
	}
	list, _ := res.([]any)
	if len(list) != 2 {
		t.Fatalf("PUBSUB SHARDNUMSUB reply %v", res)
	}
	count, _ := list[1].(int64)
	return count
}

func spublish(t *testing.T, cc *redis.ClusterClient, post string, count, ver int64) {
	t.Helper()
	payload := store(t, cc, post, count, ver)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cc.SPublish(ctx, keys.Channel(post), payload).Err(); err != nil {
		t.Fatalf("SPUBLISH %s: %v", post, err)
	}
}

// TestClusterRoutesEachPostToItsNode subscribes posts owned by each of three masters: each
// channel is subscribed (sharded) on its owner, over one connection per master, and an SPUBLISH
// on any shard reaches the sink. Unsubscribe removes the subscription from the owner.
func TestClusterRoutesEachPostToItsNode(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cc := c.Client(t)
	rel, sink := startRelay(t, cc)
	posts := postsPerNode(t, c, 2)
	for _, ps := range posts {
		subscribeAll(t, rel, ps...)
	}
	bus := rel.bus.(*clusterBus)
	bus.mu.Lock()
	conns := len(bus.conns)
	bus.mu.Unlock()
	if conns != 3 {
		t.Errorf("pub/sub connections = %d; want 3, one per master", conns)
	}
	for node, ps := range posts {
		for i, p := range ps {
			if got := shardedSubscribers(t, c.Nodes[node], keys.Channel(p)); got != 1 {
				t.Errorf("node %d: sharded subscribers of %s = %d; want 1", node, p, got)
			}
			spublish(t, cc, p, int64(10*node+i+1), int64(100+i))
		}
	}
	for node, ps := range posts {
		for i, p := range ps {
			want := int64(10*node + i + 1)
			poll.Until(t, 5*time.Second, "post "+p+" count "+itoa(int(want)), func() bool { return sink.has(p, want) })
		}
	}
	if got := rel.Stats().Messages.Load(); got != 6 {
		t.Errorf("messages = %d; want 6 (one per SPUBLISH)", got)
	}

	gone := posts[1][0]
	rel.Unsubscribe([]string{gone})
	poll.Until(t, 5*time.Second, "no subscriber of "+gone, func() bool {
		return shardedSubscribers(t, c.Nodes[1], keys.Channel(gone)) == 0
	})
	if got := shardedSubscribers(t, c.Nodes[1], keys.Channel(posts[1][1])); got != 1 {
		t.Errorf("subscribers of %s after unsubscribing %s = %d; want 1", posts[1][1], gone, got)
	}
	poll.Until(t, 10*time.Second, "Healthy", rel.Healthy)
}

// TestClusterFollowsMigratedSlot moves a subscribed post's slot to another master. The old owner
// pushes `sunsubscribe`; the relay must subscribe on the new owner, re-read the post (delivering a
// change it never saw published) and receive what is published there afterwards.
func TestClusterFollowsMigratedSlot(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cc := c.Client(t)
	rel, sink := startRelay(t, cc)
	posts := postsPerNode(t, c, 1)
	post, neighbour := posts[0][0], posts[1][0]
	subscribeAll(t, rel, post, neighbour)
	store(t, cc, post, 3, 300) // stored, not published

	c.MigrateSlot(keySlot(keys.Channel(post)), c.Nodes[2])
	poll.Until(t, 10*time.Second, "resynced count 3 after the move", func() bool { return sink.has(post, 3) })
	if got := shardedSubscribers(t, c.Nodes[2], keys.Channel(post)); got != 1 {
		t.Errorf("subscribers of %s on its new owner = %d; want 1", post, got)
	}
	if got := shardedSubscribers(t, c.Nodes[0], keys.Channel(post)); got != 0 {
		t.Errorf("subscribers of %s on its old owner = %d; want 0", post, got)
	}
	if got := rel.Stats().Reroutes.Load(); got < 1 {
		t.Errorf("Reroutes = %d; want >= 1", got)
	}
	spublish(t, cc, post, 4, 400)
	spublish(t, cc, neighbour, 1, 100)
	poll.Until(t, 5*time.Second, "count 4 published on the new owner", func() bool { return sink.has(post, 4) })
	poll.Until(t, 5*time.Second, "neighbour on an untouched node", func() bool { return sink.has(neighbour, 1) })
}

// TestClusterResubscribesAfterNodeRestart crashes a master that carries several subscribed posts
// (in different slots, so go-redis's own one-command resubscription is refused with CROSSSLOT)
// and restarts it. The relay must resubscribe each slot, re-read the posts (delivering a change
// stored before the crash and never published) and receive new updates on every node.
func TestClusterResubscribesAfterNodeRestart(t *testing.T) {
	c := redistest.StartCluster(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	cc := c.Client(t)
	rel, sink := startRelay(t, cc)
	posts := postsPerNode(t, c, 3)
	for _, ps := range posts {
		subscribeAll(t, rel, ps...)
	}
	const victim = 1
	for _, p := range posts[victim] {
		store(t, cc, p, 9, 900) // stored, not published
	}

	c.Kill(victim)
	poll.Until(t, 10*time.Second, "relay to notice the crash", func() bool { return !rel.Healthy() })
	late := postsPerNode(t, c, 4)[victim][3]
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	if err := rel.Subscribe(ctx, late); err == nil {
		t.Errorf("Subscribe(%s) with its node down succeeded; want an error", late)
	}
	cancel()
	bus := rel.bus.(*clusterBus)
	bus.mu.Lock()
	left := bus.slots[keySlot(keys.Channel(late))]
	bus.mu.Unlock()
	if left != nil {
		t.Errorf("failed Subscribe(%s) left %d channels in its slot; want none", late, len(left.channels))
	}
	c.Restart(victim)
	for _, p := range posts[victim] {
		poll.Until(t, 20*time.Second, "resynced count 9 of "+p, func() bool { return sink.has(p, 9) })
		poll.Until(t, 10*time.Second, "subscription of "+p+" on the restarted node", func() bool {
			return shardedSubscribers(t, c.Nodes[victim], keys.Channel(p)) == 1
		})
	}
	for _, ps := range posts {
		for _, p := range ps {
			spublish(t, cc, p, 20, 2000)
		}
	}
	for _, ps := range posts {
		for _, p := range ps {
			poll.Until(t, 5*time.Second, "count 20 of "+p, func() bool { return sink.has(p, 20) })
		}
	}
	poll.Until(t, 10*time.Second, "Healthy", rel.Healthy)
}

// TestClusterFollowsMoved subscribes a post whose slot moved while the relay had no reason to
// look (nothing of that slot was subscribed), so its slot map is stale: the old owner answers
// MOVED and the relay must subscribe on the node it names, with Subscribe still returning only
// once the subscription is confirmed.
func TestClusterFollowsMoved(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cc := c.Client(t)
	rel, sink := startRelay(t, cc)
	posts := postsPerNode(t, c, 2)
	post := posts[0][0]
	subscribe(t, rel, posts[0][1]) // loads the slot map and connects to node 0
	c.MigrateSlot(keySlot(keys.Channel(post)), c.Nodes[1])

	subscribe(t, rel, post)
	if got := shardedSubscribers(t, c.Nodes[1], keys.Channel(post)); got != 1 {
		t.Errorf("subscribers of %s on its new owner = %d; want 1", post, got)
	}
	spublish(t, cc, post, 5, 500)
	poll.Until(t, 5*time.Second, "count 5 on the new owner", func() bool { return sink.has(post, 5) })
}

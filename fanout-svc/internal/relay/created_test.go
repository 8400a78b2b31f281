package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// create stores post's first change as the like script does: its count and version, the publish
// on its channel (which no node subscribed to a post that did not exist hears), then the
// announcement on the creations channel, from the Redis node pub.
func create(t *testing.T, client, pub redis.UniversalClient, post string, count, ver int64) {
	t.Helper()
	payload := store(t, client, post, count, ver)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, keys.Channel(post), payload).Err(); err != nil {
		t.Fatalf("PUBLISH %s: %v", post, err)
	}
	if err := pub.Publish(ctx, keys.Created(), post).Err(); err != nil {
		t.Fatalf("PUBLISH %s: %v", keys.Created(), err)
	}
}

// postChannels lists the post channels Redis has subscribers of (PUBSUB CHANNELS).
func postChannels(t *testing.T, client redis.UniversalClient) []string {
	t.Helper()
	chs, err := client.PubSubChannels(context.Background(), keys.Prefix+"{*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return chs
}

// TestMadeUpPostsHaveNoChannel: 64 posts nobody liked are subscribed and hold no channel in Redis
// (the relay keeps them waiting); one of them is created (as the like script does it, its own
// publish lost) and its first change reaches the sink, through a channel the relay subscribes
// then. Unsubscribe forgets the others and drops that channel.
func TestMadeUpPostsHaveNoChannel(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	rel, sink := startRelay(t, client)
	poll.Until(t, 10*time.Second, "listening to creations", rel.Healthy)
	var posts []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 64 {
		p := "made-up-" + itoa(i)
		posts = append(posts, p)
		if err := rel.Subscribe(ctx, p); err != nil {
			t.Fatalf("Subscribe(%s): %v", p, err)
		}
	}
	if chs := postChannels(t, client); len(chs) != 0 {
		t.Fatalf("post channels in Redis with viewers of 64 made-up posts: %v; want none", chs)
	}
	if got := rel.Waiting(); got != 64 {
		t.Errorf("Waiting() = %d; want 64", got)
	}

	create(t, client, client, posts[7], 1, 100)
	poll.Until(t, 10*time.Second, "the first like of the created post", func() bool { return sink.has(posts[7], 1) })
	if chs := postChannels(t, client); len(chs) != 1 || chs[0] != keys.Channel(posts[7]) {
		t.Errorf("post channels once one post exists: %v; want only %s", chs, keys.Channel(posts[7]))
	}
	payload := store(t, client, posts[7], 2, 200)
	if err := client.Publish(ctx, keys.Channel(posts[7]), payload).Err(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the second like, published", func() bool { return sink.has(posts[7], 2) })

	rel.Unsubscribe(posts)
	if got := rel.Waiting(); got != 0 {
		t.Errorf("Waiting() after Unsubscribe = %d; want 0", got)
	}
	poll.Until(t, 5*time.Second, "no post channel left", func() bool { return len(postChannels(t, client)) == 0 })
}

// TestCreationMissedWhileDisconnectedIsFound: a post is created while its creation is not heard
// (here: never announced); when the creations channel is confirmed again after its connection
// was killed, the relay re-reads its waiting posts and delivers the post's first change.
func TestCreationMissedWhileDisconnectedIsFound(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	rel, sink := startRelay(t, client)
	poll.Until(t, 10*time.Second, "listening to creations", rel.Healthy)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rel.Subscribe(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	store(t, client, "late", 3, 300) // stored, neither published nor announced
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 15*time.Second, "the missed creation found by the re-read", func() bool { return sink.has("late", 3) })
	if got := rel.Waiting(); got != 0 {
		t.Errorf("Waiting() = %d; want 0", got)
	}
}

// TestWaitingPostsAreReReadPeriodically: with recheckEvery set (a Cluster's relay, whose
// creations may be lost on the cluster bus while its own connection stays up), a post created
// without an announcement that reaches the relay, and with no reconnect, is found by the next
// periodic re-read.
func TestWaitingPostsAreReReadPeriodically(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	sink := newRecordingSink()
	rel := New(client, keys, sink, zaptest.NewLogger(t))
	rel.recheckEvery = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // exits when the test's cleanup cancels ctx
		defer close(done)
		rel.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	poll.Until(t, 10*time.Second, "listening to creations", rel.Healthy)
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := rel.Subscribe(sctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	store(t, client, "quiet", 2, 200) // stored, never announced; the connection stays up
	poll.Until(t, 10*time.Second, "the post found by a periodic re-read", func() bool { return sink.has("quiet", 2) })
	if got := rel.Stats().Reconnects.Load(); got != 0 {
		t.Errorf("Reconnects = %d; want 0: found without a reconnect", got)
	}
}

// TestClusterHearsCreationsFromEveryNode: on a 3-master Cluster the relay listens to the creations
// channel on one node; a post owned by each master, created there, reaches the sink: a classic
// PUBLISH is relayed to every node's subscribers. No sharded channel is held before.
func TestClusterHearsCreationsFromEveryNode(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cc := c.Client(t)
	rel, sink := startRelay(t, cc)
	poll.Until(t, 10*time.Second, "listening to creations", rel.Healthy)
	posts := postsPerNode(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ps := range posts {
		if err := rel.Subscribe(ctx, ps[0]); err != nil {
			t.Fatal(err)
		}
	}
	for node, ps := range posts {
		if got := shardedSubscribers(t, c.Nodes[node], keys.Channel(ps[0])); got != 0 {
			t.Errorf("node %d: sharded subscribers of made-up %s = %d; want 0", node, ps[0], got)
		}
	}
	for node, ps := range posts {
		owner := c.Nodes[node].Client(t)
		create(t, cc, owner, ps[0], int64(node+1), 100)
		poll.Until(t, 10*time.Second, "post "+ps[0]+" created on node "+itoa(node), func() bool { return sink.has(ps[0], int64(node+1)) })
		if got := shardedSubscribers(t, c.Nodes[node], keys.Channel(ps[0])); got != 1 {
			t.Errorf("node %d: sharded subscribers of created %s = %d; want 1", node, ps[0], got)
		}
	}
	if got := rel.Waiting(); got != 0 {
		t.Errorf("Waiting() = %d; want 0", got)
	}
}

// TestUnsubscribeOfAWaitingPostTouchesNoChannel: a waiting post that is forgotten and subscribed
// again (its viewers came back) still waits, and its creation is heard.
func TestUnsubscribeOfAWaitingPostTouchesNoChannel(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	rel, sink := startRelay(t, client)
	poll.Until(t, 10*time.Second, "listening to creations", rel.Healthy)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		if err := rel.Subscribe(ctx, "again"); err != nil {
			t.Fatal(err)
		}
		rel.Unsubscribe([]string{"again"})
	}
	if err := rel.Subscribe(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	create(t, client, client, "again", 4, 400)
	poll.Until(t, 10*time.Second, "the created post's first change", func() bool { return sink.has("again", 4) })
	if chs := postChannels(t, client); len(chs) != 1 || !strings.HasSuffix(chs[0], "{again}:ch") {
		t.Errorf("post channels: %v; want only again's", chs)
	}
}

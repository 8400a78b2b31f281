package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/redistest"
)

// TestMadeUpPostsHoldNoRedisState: a stream of 64 posts nobody liked, and a single-post stream of
// one more, leave Redis with no channel and no "watching now" key of theirs, however many intervals
// pass (issue 49: each cost a SUBSCRIBE and a key every interval, about 790 B of Redis memory per
// post, copied to every replica). The node keeps those viewers to itself until a post is created:
// the first like of one of them reaches its viewer (through the like script's announcement on the
// creations channel), and from then on the post has its channel and its watching number.
func TestMadeUpPostsHoldNoRedisState(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client(t)
	keys := rediskeys.New("")
	writer := StartWriter(t, rs.URL)
	node := StartFanout(t, rs.URL, watchEnv...)

	made := make([]string, 64)
	for i := range made {
		made[i] = "madeup" + strconv.Itoa(i)
	}
	feed := Watch(t, node.URL+"/sse?posts="+strings.Join(made, ","))
	single := Watch(t, node.URL+"/sse/madeupsingle")
	for _, p := range made {
		WaitCount(t, 10*time.Second, p, 0, feed)
	}
	WaitCount(t, 10*time.Second, "madeupsingle", 0, single)

	// A post that exists, watched after the made-up ones: once its viewer shows its watching
	// number, the node has counted at least two intervals with the made-up posts' viewers on it.
	if code, body := doRequest(t, "POST", writer.URL+"/like/real", "alice"); code != 200 {
		t.Fatalf("like: %d %s", code, body)
	}
	real := Watch(t, node.URL+"/sse/real")
	waitWatching(t, "real", 1, []*Viewer{real})

	ctx := context.Background()
	if chs := rdb.PubSubChannels(ctx, keys.Prefix+"{madeup*").Val(); len(chs) != 0 {
		t.Errorf("%d channels of made-up posts in Redis (%v...); want none", len(chs), chs[0])
	}
	if n := countKeys(t, rdb, keys.Prefix+"{madeup*"); n != 0 {
		t.Errorf("%d keys of made-up posts in Redis; want none", n)
	}
	if n := rdb.PubSubNumSub(ctx, keys.Channel("real")).Val()[keys.Channel("real")]; n != 1 {
		t.Errorf("subscribers of the liked post's channel: %d; want 1", n)
	}

	// The first like of a post its viewers waited on reaches them, and so do the next.
	if code, body := doRequest(t, "POST", writer.URL+"/like/madeup5", "alice"); code != 200 {
		t.Fatalf("like: %d %s", code, body)
	}
	WaitCount(t, 10*time.Second, "madeup5", 1, feed)
	if code, body := doRequest(t, "POST", writer.URL+"/like/madeup5", "bob"); code != 200 {
		t.Fatalf("like: %d %s", code, body)
	}
	WaitCount(t, 10*time.Second, "madeup5", 2, feed)
	if code, body := doRequest(t, "POST", writer.URL+"/react/madeupsingle/clap", "alice"); code != 200 {
		t.Fatalf("react: %d %s", code, body)
	}
	if n := rdb.PubSubNumSub(ctx, keys.Channel("madeup5")).Val()[keys.Channel("madeup5")]; n != 1 {
		t.Errorf("subscribers of the post once created: %d; want 1", n)
	}
	waitWatching(t, "madeup5", 1, []*Viewer{feed})
	waitWatching(t, "madeupsingle", 1, []*Viewer{single})
}

// countKeys returns how many keys match pattern (SCAN).
func countKeys(t *testing.T, rdb *redis.Client, pattern string) int {
	t.Helper()
	n := 0
	iter := rdb.Scan(context.Background(), 0, pattern, 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("scan %s: %v", pattern, err)
	}
	return n
}

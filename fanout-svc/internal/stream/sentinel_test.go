package stream

import (
	"context"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestSentinelFailoverKeepsViewersFlowing: a node whose client finds the primary through
// Sentinel (go-redis's failover client, a *redis.Client, so the relay subscribes with classic
// SUBSCRIBE) delivers what is published on the primary; after a kill -9 of the primary and the
// promotion of a replica, the relay's subscription follows to the new primary and the same
// viewer gets what is published there.
func TestSentinelFailoverKeepsViewersFlowing(t *testing.T) {
	s := redistest.StartSentinel(t, 1)
	client, err := redisconn.New(redisconn.Config{SentinelAddrs: s.SentinelAddrs(), SentinelMaster: s.Master, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() }) // after the node's cleanup, registered below
	n := startNode(t, client, Config{}, posts.Config{})
	exist(t, client, "p1")
	v := watch(t, n.URL+"/sse/p1")
	poll.Until(t, 10*time.Second, "the viewer's snapshot", func() bool { _, ok := v.last("p1"); return ok })
	publish(t, client, update.Update{PostID: "p1", Count: 1, TS: 1})
	poll.Until(t, 10*time.Second, "count 1 from the first primary", func() bool { return v.has("p1", 1) })

	s.KillPrimary()
	killed := time.Now()
	poll.Until(t, 15*time.Second, "count 2 from the promoted replica", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// Published on every check: until the relay has resubscribed on the new primary, a
		// message reaches nobody.
		_ = client.Publish(ctx, testKeys.Channel("p1"), update.Update{PostID: "p1", Count: 2, TS: 2}.AppendJSON(nil)).Err()
		return v.has("p1", 2)
	})
	t.Logf("viewer got the new primary's update %v after the kill", time.Since(killed).Round(time.Millisecond))
	if got := n.Hub.Admitted(); got != 1 {
		t.Errorf("%d viewers admitted after the failover; want 1 (none shed)", got)
	}
}

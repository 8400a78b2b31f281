package ramp

import (
	"context"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestRedisViewFollowsTheSentinelsPrimary: behind Sentinels, the ramp's Redis readings come from
// the primary, and after a failover from the promoted replica, where the fanout nodes subscribe
// again; the old address would read a dead node or a replica with no subscribers.
func TestRedisViewFollowsTheSentinelsPrimary(t *testing.T) {
	s := redistest.StartSentinel(t, 1)
	ctx := context.Background()
	v := newRedisView(ctx, Config{RedisSentinels: s.SentinelAddrs(), RedisSentinelMaster: s.Master, RedisPrefix: "likes:"})
	defer v.close()
	ch := rediskeys.New("likes:").Channel("a")

	watchOn := func(n *redistest.Server) {
		ps := n.Client(t).Subscribe(ctx, ch)
		t.Cleanup(func() { _ = ps.Close() })
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			t.Fatal(err)
		}
	}
	watchOn(s.Primary())
	if got, err := v.subscribers(ctx, []string{"a"}); err != nil || got[0] != 1 {
		t.Fatalf("subscribers of a on the primary = %v, %v; want [1]", got, err)
	}

	promoted := s.WaitPromoted(s.KillPrimary())
	watchOn(promoted)
	poll.Until(t, 20*time.Second, "the view to read the promoted replica", func() bool {
		got, err := v.subscribers(ctx, []string{"a"})
		return err == nil && got[0] == 1
	})
	if _, err := v.cpu(ctx); err != nil {
		t.Errorf("CPU of the promoted primary: %v", err)
	}
}

package redisconn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// failoverBound is how soon after a kill -9 of the primary the same client must write again
// (likes are acknowledged again within 10 s).
const failoverBound = 10 * time.Second

// TestSentinelClientFollowsFailover: a client built from sentinel addresses writes to the
// primary and hears its pub/sub; after the primary is killed, Sentinel promotes a replica and
// the same client writes again within failoverBound, to the new primary, and its subscription
// follows there.
func TestSentinelClientFollowsFailover(t *testing.T) {
	s := redistest.StartSentinel(t, 2)
	rdb, err := New(Config{SentinelAddrs: s.SentinelAddrs(), SentinelMaster: s.Master, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ps := rdb.Subscribe(ctx, "ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	msgs := ps.Channel()

	old := s.Primary()
	if err := rdb.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	if got, err := old.Do("GET", "k"); err != nil || got != "before" {
		t.Fatalf("get k on the primary %s: %v, %v; want before", old.Addr, got, err)
	}
	if n, err := rdb.Do(ctx, "WAIT", 2, 5000).Int(); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d, %v; want 2 replicas", n, err)
	}
	poll.Check(t, 5*time.Second, publishHeard(ctx, rdb, msgs, "before"))

	s.KillPrimary()
	killed := time.Now()
	poll.Check(t, failoverBound, func() error {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return rdb.Set(cctx, "k", "after", 0).Err()
	})
	took := time.Since(killed)
	t.Logf("writes succeed again %v after the kill", took.Round(time.Millisecond))
	if took > failoverBound {
		t.Errorf("first write after the kill succeeded after %v; want within %v", took, failoverBound)
	}
	p := s.WaitPromoted(old) // the Sentinel the client asked may be ahead of the others
	if got, err := p.Do("GET", "k"); err != nil || got != "after" {
		t.Errorf("get k on the new primary %s: %v, %v; want after", p.Addr, got, err)
	}
	poll.Check(t, failoverBound, publishHeard(ctx, rdb, msgs, "after"))
}

// publishHeard returns a poll condition that publishes payload on "ch" and holds once the
// subscription delivers it. It publishes on every check: until go-redis has resubscribed on the
// new primary, a message is published to nobody.
func publishHeard(ctx context.Context, rdb redis.UniversalClient, msgs <-chan *redis.Message, payload string) func() error {
	return func() error {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := rdb.Publish(cctx, "ch", payload).Err(); err != nil {
			return err
		}
		timer := time.NewTimer(100 * time.Millisecond)
		defer timer.Stop()
		for {
			select {
			case m := <-msgs:
				if m.Payload == payload {
					return nil
				}
			case <-timer.C:
				return fmt.Errorf("published %q, not heard within 100ms", payload)
			}
		}
	}
}

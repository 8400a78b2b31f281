package redistest

import (
	"context"
	"testing"
	"time"
)

// TestSentinelPromotesReplicaAfterPrimaryKill checks the topology a test gets: Nodes[0] is the
// primary, a write replicated to both replicas survives a kill -9 of the primary, one replica is
// promoted and the other follows it.
func TestSentinelPromotesReplicaAfterPrimaryKill(t *testing.T) {
	s := StartSentinel(t, 2)
	old := s.Primary()
	if old != s.Nodes[0] {
		t.Fatalf("primary is %s; want Nodes[0] %s", old.Addr, s.Nodes[0].Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := old.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	if n, err := c.Do(ctx, "WAIT", 2, 5000).Int(); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d, %v; want 2 replicas", n, err)
	}

	killed := time.Now()
	if got := s.KillPrimary(); got != old {
		t.Fatalf("KillPrimary killed %s; want %s", got.Addr, old.Addr)
	}
	p := s.WaitPromoted(old)
	t.Logf("replica %s promoted %v after the kill", p.Addr, time.Since(killed).Round(time.Millisecond))
	if got, err := p.Client(t).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("get k on the new primary: %q, %v; want v", got, err)
	}
	if got := s.Primary(); got != p {
		t.Errorf("Primary() = %s; want %s", got.Addr, p.Addr)
	}
	s.WaitHealthy() // the other replica now replicates p
}

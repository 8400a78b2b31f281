package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestClusterSpreadsSlotsAndSurvivesRestart checks the cluster a test gets: three masters that
// split the slots, keys landing on different nodes, and a killed node that rejoins with its slots
// and its data (append-only file) after Restart.
func TestClusterSpreadsSlotsAndSurvivesRestart(t *testing.T) {
	c := StartCluster(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	cc := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	owners := map[int]string{}
	for i := 0; len(owners) < 3 && i < 100; i++ {
		key := fmt.Sprintf("{%d}:k", i)
		owners[c.Index(c.NodeFor(key))] = key
	}
	if len(owners) != 3 {
		t.Fatalf("100 keys landed on %d nodes; want 3", len(owners))
	}
	for _, key := range owners {
		if err := cc.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatalf("set %s: %v", key, err)
		}
	}

	victim := 1
	c.Kill(victim)
	if err := cc.Get(ctx, owners[victim]).Err(); err == nil {
		t.Fatalf("get %s succeeded with its node killed; want error", owners[victim])
	}
	c.Restart(victim)
	for i, key := range owners {
		got, err := cc.Get(ctx, key).Result()
		if err != nil || got != "v" {
			t.Errorf("node %d key %s after restart: %q, %v; want v", i, key, got, err)
		}
	}
	if got := c.Index(c.NodeFor(owners[victim])); got != victim {
		t.Errorf("after restart %s is owned by node %d; want %d", owners[victim], got, victim)
	}
}

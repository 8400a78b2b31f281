package slotmove

import (
	"context"
	"strconv"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestMoveSlotWithAllKeys moves a slot holding 2,500 keys of one hash tag in batches of 1,000:
// three MIGRATE calls, every key (and its TTL) on the new owner, none left behind, the new owner
// named by every node; a second move to the same node does nothing.
func TestMoveSlotWithAllKeys(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cc := c.Client(t)
	ctx := context.Background()
	const n = 2500
	for i := range n {
		if err := cc.Set(ctx, "{p}:u:"+strconv.Itoa(i), "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cc.Set(ctx, "{p}:b:x", "1 1", 60e9).Err(); err != nil {
		t.Fatal(err)
	}
	slot := c.Slot("{p}")
	src := c.NodeFor("{p}")
	dst := c.Nodes[(c.Index(src)+1)%len(c.Nodes)]

	res, err := Move(ctx, c.Nodes[2].Addr, slot, dst.Addr, Options{Batch: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Keys != n+1 || res.Migrates != 3 || res.From != src.Addr || res.To != dst.Addr || res.Moving <= 0 {
		t.Errorf("Move: %+v; want %d keys in 3 calls from %s to %s", res, n+1, src.Addr, dst.Addr)
	}
	c.WaitHealthy()
	if owner := c.NodeFor("{p}"); owner != dst {
		t.Errorf("slot %d owned by %s; want %s", slot, owner.Addr, dst.Addr)
	}
	if left, err := src.Do("CLUSTER", "COUNTKEYSINSLOT", slot); err != nil || left != int64(0) {
		t.Errorf("keys left on the source: %v, %v; want 0", left, err)
	}
	if got, err := dst.Do("CLUSTER", "COUNTKEYSINSLOT", slot); err != nil || got != int64(n+1) {
		t.Errorf("keys on the target: %v, %v; want %d", got, err, n+1)
	}
	if ttl, err := dst.Do("PTTL", "{p}:b:x"); err != nil || ttl.(int64) <= 0 {
		t.Errorf("TTL of the moved batch key: %v, %v; want kept", ttl, err)
	}
	again, err := Move(ctx, c.Nodes[0].Addr, slot, dst.Addr, Options{})
	if err != nil || again.Keys != 0 || again.From != dst.Addr {
		t.Errorf("second move: %+v, %v; want nothing to do", again, err)
	}
	if _, err := Move(ctx, c.Nodes[0].Addr, slot, "127.0.0.1:1", Options{}); err == nil {
		t.Error("move to a node outside the cluster: no error")
	}
}

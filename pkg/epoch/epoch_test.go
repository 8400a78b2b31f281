package epoch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/epoch"
	"github.com/likes/likes/testkit/redistest"
)

const key = "likes:epoch"

// store runs Lua's rule on c, as the writer's script does with a change, and returns the epoch.
var store = redis.NewScript(epoch.Lua + `return currentEpoch(KEYS[1])`)

// read applies Of to what a reader's pipeline reads from c.
func read(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	var get func() (int64, error)
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = epoch.Queue(ctx, p, key)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	e, err := get()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestEpochRisesWithEachPromotion follows a post's Redis through two promotions: the epoch is 0
// until the first, a reader on the new primary (or on its replica) names the next epoch before
// any change is stored there, and the change then stores exactly that one. A restart that keeps
// the replication id changes nothing.
func TestEpochRisesWithEachPromotion(t *testing.T) {
	ctx := context.Background()
	a := redistest.Start(t)
	ac := a.Client(t)
	// A primary takes a new replication id when its first replica attaches (it has no backlog
	// to share yet): attach it before the first change, or that change's epoch would rise once.
	b := redistest.StartReplica(t, a)
	bc := b.Client(t)
	if e := read(t, ac); e != 0 {
		t.Errorf("a Redis no change reached: epoch %d; want 0", e)
	}
	if e, err := store.Run(ctx, ac, []string{key}).Int64(); err != nil || e != 0 {
		t.Fatalf("first change: epoch %d, %v; want 0", e, err)
	}
	if e := read(t, ac); e != 0 {
		t.Errorf("read after the first change: epoch %d; want 0", e)
	}

	if e := read(t, bc); e != 0 {
		t.Errorf("a replica of the first primary: epoch %d; want 0, its primary's", e)
	}
	if err := bc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if e := read(t, bc); e != 1 {
		t.Errorf("the promoted replica, before any change: epoch %d; want 1", e)
	}
	if e, err := store.Run(ctx, bc, []string{key}).Int64(); err != nil || e != 1 {
		t.Errorf("a change on the promoted replica: epoch %d, %v; want 1", e, err)
	}
	if e, err := store.Run(ctx, bc, []string{key}).Int64(); err != nil || e != 1 {
		t.Errorf("the next change there: epoch %d, %v; want 1 still", e, err)
	}

	c := redistest.StartReplica(t, b)
	cc := c.Client(t)
	if e := read(t, cc); e != 1 {
		t.Errorf("a replica of the second primary: epoch %d; want 1", e)
	}
	if err := cc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if e, err := store.Run(ctx, cc, []string{key}).Int64(); err != nil || e != 2 {
		t.Errorf("a change after the second promotion: epoch %d, %v; want 2", e, err)
	}
}

func TestOf(t *testing.T) {
	for _, tt := range []struct {
		replid, stored string
		want           int64
	}{
		{"aa", "", 0},
		{"aa", "aa 0", 0},
		{"aa", "aa 7", 7},
		{"bb", "aa 7", 8},
		{"aa", "garbage", 1},
		{"", "aa 3", 4},
	} {
		if got := epoch.Of(tt.replid, tt.stored); got != tt.want {
			t.Errorf("Of(%q, %q) = %d; want %d", tt.replid, tt.stored, got, tt.want)
		}
	}
	info := "# Replication\r\nrole:master\r\nmaster_replid:0123abc\r\nmaster_replid2:000\r\n"
	if got := epoch.ReplID(info); got != "0123abc" {
		t.Errorf("ReplID = %q; want 0123abc", got)
	}
	if got := epoch.ReplID("role:master\r\n"); got != "" {
		t.Errorf("ReplID of an INFO without one = %q; want empty", got)
	}
}

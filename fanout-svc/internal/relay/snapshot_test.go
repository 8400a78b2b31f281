package relay

import (
	"context"
	"testing"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/redistest"
)

// TestSnapshotReadsReactions: a snapshot carries a post's reactions in the writer's form (kinds
// in byte order), none for a post without, and refuses a reaction count that is not a number
// rather than forward it to viewers.
func TestSnapshotReadsReactions(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	rdb.Set(ctx, keys.Count("a"), 4, 0)
	rdb.Set(ctx, keys.Version("a"), 1_800_000_000_000_000, 0)
	rdb.HSet(ctx, keys.Reactions("a"), "wow", 2, "clap", 10)
	rel := New(rdb, keys, nil, nil)
	got, err := rel.Snapshot(ctx, []string{"a", "b"})
	want := []update.Update{
		{PostID: "a", Count: 4, TS: 1_800_000_000_000_000, Reactions: `{"clap":10,"wow":2}`},
		{PostID: "b"},
	}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Snapshot = %+v, %v; want %+v", got, err, want)
	}
	rdb.HSet(ctx, keys.Reactions("b"), "clap", "x")
	if got, err := rel.Snapshot(ctx, []string{"b"}); err == nil {
		t.Errorf("Snapshot of a malformed reaction count = %+v; want an error", got)
	}
}

package store_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestLikersChunksRollOver: likes in batches of 1, 50 and 200 fill chunk after chunk; the chunks
// list every liker once, each user's dedup key names their chunk, and the store remembers the
// current chunk. A batch of likes that MSETNX cannot store (a repeated user) takes the general
// path and places its likes the same way.
func TestLikersChunksRollOver(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	users, _ := storetest.LikeBatches(t, s, "p", "u", 1, 50, 200, 1, 50, 200)
	mixed := []store.Change{{User: users[0]}}
	for i := range 60 {
		u := "m" + strconv.Itoa(i)
		users = append(users, u)
		mixed = append(mixed, store.Change{User: u})
	}
	res, err := s.Apply(context.Background(), "p", mixed)
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != (store.Result{Count: 502, Changed: false}) || res[60] != (store.Result{Count: 562, Changed: true}) {
		t.Errorf("mixed batch: first %+v, last %+v; want 502 unchanged, then 562 changed", res[0], res[60])
	}

	cur, chunkOf := storetest.CheckLikers(t, rdb, "p", users, 200)
	if cur < 4 {
		t.Errorf("current chunk %d after %d likers; want at least 4", cur, len(users))
	}
	sizes := make([]int, cur+1)
	for _, c := range chunkOf {
		sizes[c]++
	}
	for c, n := range sizes[:cur] {
		if n < store.LikersChunk {
			t.Errorf("chunk %d below the current one holds %d likers; want it full (%d)", c, n, store.LikersChunk)
		}
	}
	if got := s.CachedChunk("p"); got != cur {
		t.Errorf("store remembers chunk %d; want the current %d", got, cur)
	}
}

// TestStaleWriterFollowsChunks: a second writer on the same Redis, whose cache still says chunk 0
// after the first moved the post's chunks on, is sent back once (the -1 reply) and then stores
// its batch in the current chunk with exact results; its cache follows.
func TestStaleWriterFollowsChunks(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s1 := store.New(rdb, storetest.Keys, store.Options{})
	stale := store.New(rdb, storetest.Keys, store.Options{})
	if err := s1.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := stale.Like(ctx, "p", "early")
	if err != nil || first != (store.Result{Count: 1, Changed: true}) {
		t.Fatalf("first like: %+v, %v", first, err)
	}
	users, _ := storetest.LikeBatches(t, s1, "p", "u", 100, 100, 100, 100)
	users = append(users, "early")
	cur, _ := storetest.CheckLikers(t, rdb, "p", users, 100)
	if cur < 2 || stale.CachedChunk("p") != 0 {
		t.Fatalf("current chunk %d, the stale writer's %d; want 2 or more and 0", cur, stale.CachedChunk("p"))
	}

	calls := srv.ScriptCalls(t)
	batch := []store.Change{{User: "early"}, {User: "v0"}, {User: "v1"}, {User: "v0"}, {User: users[7], Unlike: true}, {User: "v2"}}
	got, err := stale.Apply(ctx, "p", batch)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Result{{Count: 401, Changed: false}, {Count: 402, Changed: true}, {Count: 403, Changed: true}, {Count: 403, Changed: false}, {Count: 402, Changed: true}, {Count: 403, Changed: true}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d %+v: got %+v; want %+v", i, batch[i], got[i], want[i])
		}
	}
	// The batch unlikes, so the chunk that lists users[7] was read first; the first call named
	// chunk 0 as current and was sent back, the second stored it.
	if n := srv.ScriptCalls(t) - calls; n != 2 {
		t.Errorf("%d script calls; want 2 (one sent back with the current chunk, one stored)", n)
	}
	gone := users[7]
	users = slices.DeleteFunc(users, func(u string) bool { return u == gone })
	users = append(users, "v0", "v1", "v2")
	cur2, chunkOf := storetest.CheckLikers(t, rdb, "p", users, 100)
	for _, u := range []string{"v0", "v1", "v2"} {
		if chunkOf[u] < cur {
			t.Errorf("%s went to chunk %d; want the current one (%d or after)", u, chunkOf[u], cur)
		}
	}
	if got := stale.CachedChunk("p"); got != cur2 {
		t.Errorf("the stale writer remembers chunk %d; want %d", got, cur2)
	}

	// Now current, it stores the next batch in one call.
	calls = srv.ScriptCalls(t)
	if _, err := stale.Like(ctx, "p", "v3"); err != nil {
		t.Fatal(err)
	}
	if n := srv.ScriptCalls(t) - calls; n != 1 {
		t.Errorf("%d script calls with a current cache; want 1", n)
	}
}

// TestUnlikeFromAnOldChunk: an unlike of a user listed in an old chunk removes them from that
// chunk, whether the writer's cache is stale (chunk 0 while the post is at 2) or current (the old
// chunk is then neither the current one nor the next: only the dedup key read first names it).
// Liking again lists the user in the current chunk.
func TestUnlikeFromAnOldChunk(t *testing.T) {
	s1, rdb := storetest.NewStore(t)
	ctx := context.Background()
	users, _ := storetest.LikeBatches(t, s1, "p", "u", 100, 100, 100)
	cur, chunkOf := storetest.CheckLikers(t, rdb, "p", users, 100)
	if cur != 2 {
		t.Fatalf("current chunk %d after 300 likes; want 2", cur)
	}
	inChunk := func(c int64) string {
		for _, u := range users {
			if chunkOf[u] == c {
				return u
			}
		}
		t.Fatalf("no user in chunk %d", c)
		return ""
	}
	stale := store.New(rdb, storetest.Keys, store.Options{})
	tests := []struct {
		name  string
		s     *store.Store
		chunk int64
	}{
		{"stale cache, chunk 1", stale, 1},
		{"current cache, chunk 0", stale, 0}, // the first case taught it the current chunk
		{"first writer, chunk 0", s1, 0},
	}
	for _, tt := range tests {
		u := inChunk(tt.chunk)
		n, _ := s1.Count(ctx, "p")
		res, err := tt.s.Unlike(ctx, "p", u)
		if err != nil || res != (store.Result{Count: n - 1, Changed: true}) {
			t.Fatalf("%s: unlike %s: %+v, %v; want count %d changed", tt.name, u, res, err, n-1)
		}
		if err := rdb.LPos(ctx, storetest.Keys.Likers("p", tt.chunk), u, redis.LPosArgs{}).Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s: %s still in chunk %d (%v)", tt.name, u, tt.chunk, err)
		}
		users = slices.DeleteFunc(users, func(v string) bool { return v == u })
		storetest.CheckLikers(t, rdb, "p", users, 100)

		res, err = tt.s.Like(ctx, "p", u)
		if err != nil || res != (store.Result{Count: n, Changed: true}) {
			t.Fatalf("%s: like %s again: %+v, %v; want count %d changed", tt.name, u, res, err, n)
		}
		users = append(users, u)
		var now int64
		now, chunkOf = storetest.CheckLikers(t, rdb, "p", users, 100)
		if chunkOf[u] != now {
			t.Errorf("%s: %s liked again is in chunk %d; want the current %d", tt.name, u, chunkOf[u], now)
		}
	}
}

// TestScriptAsksForUnlikedChunks calls the script with an unlike of a user whose like is in a
// chunk the call does not declare: it answers {-2, current chunk} and changes nothing (not even
// the batch's like), and the same batch with the chunk declared goes through.
func TestScriptAsksForUnlikedChunks(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	users, _ := storetest.LikeBatches(t, s, "p", "u", 200, 100)
	cur, chunkOf := storetest.CheckLikers(t, rdb, "p", users, 200)
	if cur != 2 || chunkOf["u0"] != 0 {
		t.Fatalf("current chunk %d, u0 in chunk %d; want 2 and 0", cur, chunkOf["u0"])
	}
	ver := rdb.Get(ctx, storetest.Keys.Version("p")).Val()
	msgs := storetest.Subscribe(t, rdb, storetest.Keys.Channel("p"))
	future := time.Now().Add(time.Minute).UnixMilli()
	run := func(batch string, chunks ...int64) ([]any, error) {
		k := []string{storetest.Keys.Count("p"), storetest.Keys.Version("p"), storetest.Keys.Channel("p"), storetest.Keys.Batch("p", batch),
			storetest.Keys.LikersChunk("p"), storetest.Keys.Likers("p", cur), storetest.Keys.Likers("p", cur+1),
			storetest.Keys.User("p", "new"), storetest.Keys.User("p", "u0")}
		args := []any{"p", "PUBLISH", "LU", future, cur, len(chunks)}
		for _, c := range chunks {
			k = append(k, storetest.Keys.Likers("p", c))
			args = append(args, c)
		}
		k = append(k, storetest.Keys.UserLikes("new"), storetest.Keys.UserLikes("u0"), storetest.Keys.Reactions("p"))
		return store.ChangeScript.EvalSha(ctx, rdb, k, append(args, "new", "u0", "1", 0, 3000)...).Slice()
	}

	got, err := run("b1")
	if err != nil || len(got) != 2 || got[0] != int64(store.AgainUnliked) || got[1] != cur {
		t.Fatalf("unlike from an undeclared chunk: %#v, %v; want {%d, %d}", got, err, store.AgainUnliked, cur)
	}
	storetest.CheckLikers(t, rdb, "p", users, 200)
	if v := rdb.Get(ctx, storetest.Keys.Version("p")).Val(); v != ver {
		t.Errorf("version %s after a call sent back; want %s unchanged", v, ver)
	}
	if n := rdb.Exists(ctx, storetest.Keys.Batch("p", "b1"), storetest.Keys.UserLikes("new")).Val(); n != 0 {
		t.Errorf("a call sent back left %d of its batch key and the like's index entry; want none", n)
	}
	if n := rdb.ZCard(ctx, storetest.Keys.UserLikes("u0")).Val(); n != 1 {
		t.Errorf("u0's index holds %d posts after a call sent back; want 1", n)
	}

	got, err = run("b2", 0)
	if err != nil || len(got) != 7 || got[0] != int64(300) || got[1] != "11" || got[2] != cur {
		t.Fatalf("the same batch with chunk 0 declared: %#v, %v; want {300, \"11\", %d}", got, err, cur)
	}
	users = append(slices.DeleteFunc(users, func(u string) bool { return u == "u0" }), "new")
	storetest.CheckLikers(t, rdb, "p", users, 200)
	// The call sent back published nothing: the first message is the second call's.
	u, err := update.Parse([]byte(storetest.Receive(t, msgs).Payload))
	if err != nil || u.Count != 300 {
		t.Errorf("first message %+v, %v; want the second call's count 300", u, err)
	}
}

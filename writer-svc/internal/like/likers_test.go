package like

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redistest"
	"github.com/likes/likes/pkg/update"
)

// likeBatches likes post by fresh users named prefix+i, one Store.Apply per size, and checks
// that each like was new and counted in order. It returns the users in the order they liked and
// the batch each one was in.
func likeBatches(t *testing.T, s *Store, post, prefix string, sizes ...int) ([]string, map[string]int) {
	t.Helper()
	ctx := context.Background()
	before, err := s.Count(ctx, post)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	batchOf := make(map[string]int)
	for b, n := range sizes {
		changes := make([]Change, n)
		for i := range changes {
			u := prefix + strconv.Itoa(len(users))
			users = append(users, u)
			batchOf[u] = b
			changes[i] = Change{User: u}
		}
		res, err := s.Apply(ctx, post, changes)
		if err != nil {
			t.Fatalf("batch %d of %d likes: %v", b, n, err)
		}
		for i, r := range res {
			if want := before + int64(len(users)-n+i+1); r != (Result{Count: want, Changed: true}) {
				t.Fatalf("batch %d, like %d: got %+v; want count %d changed", b, i, r, want)
			}
		}
	}
	return users, batchOf
}

// checkLikers checks post's likers chunks against want, the users who like it: the union of the
// chunks is want, no user is in two chunks, every user's dedup key holds the number of the chunk
// that lists them, the count is len(want), no chunk lies above the current one and none holds
// more than likersChunk + batch (one batch past full). It returns the current chunk and the
// chunk of each user.
func checkLikers(t *testing.T, rdb *redis.Client, post string, want []string, batch int) (int64, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	cur, err := rdb.Get(ctx, keys.LikersChunk(post)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	chunkOf := make(map[string]int64)
	for c := int64(0); c <= cur; c++ {
		members, err := rdb.LRange(ctx, keys.Likers(post, c), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(members) > likersChunk+batch {
			t.Errorf("chunk %d holds %d likers; want at most %d (%d + one batch of %d)", c, len(members), likersChunk+batch, likersChunk, batch)
		}
		for _, u := range members {
			if prev, dup := chunkOf[u]; dup {
				t.Errorf("%s is in chunks %d and %d", u, prev, c)
			}
			chunkOf[u] = c
		}
	}
	if n := rdb.Exists(ctx, keys.Likers(post, cur+1)).Val(); n != 0 {
		t.Errorf("chunk %d exists above the current chunk %d", cur+1, cur)
	}
	for _, u := range want {
		c, listed := chunkOf[u]
		if !listed {
			t.Errorf("%s likes %s but no chunk lists them", u, post)
			continue
		}
		if v, err := rdb.Get(ctx, keys.User(post, u)).Result(); err != nil || v != strconv.FormatInt(c, 10) {
			t.Errorf("dedup key of %s: %q, %v; want %d, the chunk that lists them", u, v, err, c)
		}
	}
	if len(chunkOf) != len(want) {
		t.Errorf("the chunks list %d likers; want %d", len(chunkOf), len(want))
	}
	if n := countKeys(t, rdb, keys.User(post, "*")); n != len(want) {
		t.Errorf("%d dedup keys; want %d", n, len(want))
	}
	if n, err := rdb.Get(ctx, keys.Count(post)).Int64(); err != nil || n != int64(len(want)) {
		t.Errorf("count %d, %v; want %d", n, err, len(want))
	}
	return cur, chunkOf
}

// TestLikersChunksRollOver: likes in batches of 1, 50 and 200 fill chunk after chunk; the chunks
// list every liker once, each user's dedup key names their chunk, and the store remembers the
// current chunk. A batch of likes that MSETNX cannot store (a repeated user) takes the general
// path and places its likes the same way.
func TestLikersChunksRollOver(t *testing.T) {
	s, rdb := newStore(t)
	users, _ := likeBatches(t, s, "p", "u", 1, 50, 200, 1, 50, 200)
	mixed := []Change{{User: users[0]}}
	for i := range 60 {
		u := "m" + strconv.Itoa(i)
		users = append(users, u)
		mixed = append(mixed, Change{User: u})
	}
	res, err := s.Apply(context.Background(), "p", mixed)
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != (Result{Count: 502, Changed: false}) || res[60] != (Result{Count: 562, Changed: true}) {
		t.Errorf("mixed batch: first %+v, last %+v; want 502 unchanged, then 562 changed", res[0], res[60])
	}

	cur, chunkOf := checkLikers(t, rdb, "p", users, 200)
	if cur < 4 {
		t.Errorf("current chunk %d after %d likers; want at least 4", cur, len(users))
	}
	sizes := make([]int, cur+1)
	for _, c := range chunkOf {
		sizes[c]++
	}
	for c, n := range sizes[:cur] {
		if n < likersChunk {
			t.Errorf("chunk %d below the current one holds %d likers; want it full (%d)", c, n, likersChunk)
		}
	}
	if got := s.chunks.get("p"); got != cur {
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
	s1 := NewStore(rdb, keys, StoreOptions{})
	stale := NewStore(rdb, keys, StoreOptions{})
	if err := s1.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := stale.Like(ctx, "p", "early")
	if err != nil || first != (Result{Count: 1, Changed: true}) {
		t.Fatalf("first like: %+v, %v", first, err)
	}
	users, _ := likeBatches(t, s1, "p", "u", 100, 100, 100, 100)
	users = append(users, "early")
	cur, _ := checkLikers(t, rdb, "p", users, 100)
	if cur < 2 || stale.chunks.get("p") != 0 {
		t.Fatalf("current chunk %d, the stale writer's %d; want 2 or more and 0", cur, stale.chunks.get("p"))
	}

	calls := srv.ScriptCalls(t)
	batch := []Change{{User: "early"}, {User: "v0"}, {User: "v1"}, {User: "v0"}, {User: users[7], Unlike: true}, {User: "v2"}}
	got, err := stale.Apply(ctx, "p", batch)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{{Count: 401, Changed: false}, {Count: 402, Changed: true}, {Count: 403, Changed: true}, {Count: 403, Changed: false}, {Count: 402, Changed: true}, {Count: 403, Changed: true}}
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
	cur2, chunkOf := checkLikers(t, rdb, "p", users, 100)
	for _, u := range []string{"v0", "v1", "v2"} {
		if chunkOf[u] < cur {
			t.Errorf("%s went to chunk %d; want the current one (%d or after)", u, chunkOf[u], cur)
		}
	}
	if got := stale.chunks.get("p"); got != cur2 {
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
	s1, rdb := newStore(t)
	ctx := context.Background()
	users, _ := likeBatches(t, s1, "p", "u", 100, 100, 100)
	cur, chunkOf := checkLikers(t, rdb, "p", users, 100)
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
	stale := NewStore(rdb, keys, StoreOptions{})
	tests := []struct {
		name  string
		s     *Store
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
		if err != nil || res != (Result{Count: n - 1, Changed: true}) {
			t.Fatalf("%s: unlike %s: %+v, %v; want count %d changed", tt.name, u, res, err, n-1)
		}
		if err := rdb.LPos(ctx, keys.Likers("p", tt.chunk), u, redis.LPosArgs{}).Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s: %s still in chunk %d (%v)", tt.name, u, tt.chunk, err)
		}
		users = slices.DeleteFunc(users, func(v string) bool { return v == u })
		checkLikers(t, rdb, "p", users, 100)

		res, err = tt.s.Like(ctx, "p", u)
		if err != nil || res != (Result{Count: n, Changed: true}) {
			t.Fatalf("%s: like %s again: %+v, %v; want count %d changed", tt.name, u, res, err, n)
		}
		users = append(users, u)
		var now int64
		now, chunkOf = checkLikers(t, rdb, "p", users, 100)
		if chunkOf[u] != now {
			t.Errorf("%s: %s liked again is in chunk %d; want the current %d", tt.name, u, chunkOf[u], now)
		}
	}
}

// TestScriptAsksForUnlikedChunks calls the script with an unlike of a user whose like is in a
// chunk the call does not declare: it answers {-2, current chunk} and changes nothing (not even
// the batch's like), and the same batch with the chunk declared goes through.
func TestScriptAsksForUnlikedChunks(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	users, _ := likeBatches(t, s, "p", "u", 200, 100)
	cur, chunkOf := checkLikers(t, rdb, "p", users, 200)
	if cur != 2 || chunkOf["u0"] != 0 {
		t.Fatalf("current chunk %d, u0 in chunk %d; want 2 and 0", cur, chunkOf["u0"])
	}
	ver := rdb.Get(ctx, keys.Version("p")).Val()
	msgs := subscribe(t, rdb, keys.Channel("p"))
	future := time.Now().Add(time.Minute).UnixMilli()
	run := func(batch string, chunks ...int64) ([]any, error) {
		k := []string{keys.Count("p"), keys.Version("p"), keys.Channel("p"), keys.Batch("p", batch),
			keys.LikersChunk("p"), keys.Likers("p", cur), keys.Likers("p", cur+1),
			keys.User("p", "new"), keys.User("p", "u0")}
		args := []any{"p", "PUBLISH", "LU", future, cur, len(chunks)}
		for _, c := range chunks {
			k = append(k, keys.Likers("p", c))
			args = append(args, c)
		}
		k = append(k, keys.UserLikes("new"), keys.UserLikes("u0"), keys.Reactions("p"))
		return changeScript.EvalSha(ctx, rdb, k, append(args, "new", "u0", "1", 0, 3000)...).Slice()
	}

	got, err := run("b1")
	if err != nil || len(got) != 2 || got[0] != int64(againUnliked) || got[1] != cur {
		t.Fatalf("unlike from an undeclared chunk: %#v, %v; want {%d, %d}", got, err, againUnliked, cur)
	}
	checkLikers(t, rdb, "p", users, 200)
	if v := rdb.Get(ctx, keys.Version("p")).Val(); v != ver {
		t.Errorf("version %s after a call sent back; want %s unchanged", v, ver)
	}
	if n := rdb.Exists(ctx, keys.Batch("p", "b1"), keys.UserLikes("new")).Val(); n != 0 {
		t.Errorf("a call sent back left %d of its batch key and the like's index entry; want none", n)
	}
	if n := rdb.ZCard(ctx, keys.UserLikes("u0")).Val(); n != 1 {
		t.Errorf("u0's index holds %d posts after a call sent back; want 1", n)
	}

	got, err = run("b2", 0)
	if err != nil || len(got) != 6 || got[0] != int64(300) || got[1] != "11" || got[2] != cur {
		t.Fatalf("the same batch with chunk 0 declared: %#v, %v; want {300, \"11\", %d}", got, err, cur)
	}
	users = append(slices.DeleteFunc(users, func(u string) bool { return u == "u0" }), "new")
	checkLikers(t, rdb, "p", users, 200)
	// The call sent back published nothing: the first message is the second call's.
	u, err := update.Parse([]byte(receive(t, msgs).Payload))
	if err != nil || u.Count != 300 {
		t.Errorf("first message %+v, %v; want the second call's count 300", u, err)
	}
}

// TestLikersPaging lists a post's likers across chunks: newest first (by batch; a batch's likers
// share one version), every liker once, in pages of exactly the limit until the last, whose next
// cursor is "". A like between two pages goes above the cursor and does not shift the next page.
func TestLikersPaging(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	rd := NewReader(rdb, keys, 100)
	users, batchOf := likeBatches(t, s, "p", "u", 1, 50, 200, 1, 7, 50)
	checkLikers(t, rdb, "p", users, 200)

	all := listLikers(t, rd, "p", MaxPage, nil)
	if len(all) != len(users) {
		t.Fatalf("listed %d likers; want %d", len(all), len(users))
	}
	seen := make(map[string]bool)
	for i, u := range all {
		if seen[u] {
			t.Errorf("%s listed twice", u)
		}
		seen[u] = true
		b, ok := batchOf[u]
		if !ok {
			t.Fatalf("listed %s, who never liked", u)
		}
		if i == 0 {
			continue
		}
		prev := all[i-1]
		if pb := batchOf[prev]; pb < b {
			t.Errorf("entry %d: %s (batch %d) after %s (batch %d); want newest first", i, u, b, prev, pb)
		}
	}

	added := 0
	paged := listLikers(t, rd, "p", 7, func() {
		added++
		if _, err := s.Like(ctx, "p", "late"+strconv.Itoa(added)); err != nil {
			t.Fatal(err)
		}
	})
	if !slices.Equal(paged, all) {
		t.Errorf("pages of 7 with likes between them listed %d likers; want the %d of one listing, in its order", len(paged), len(all))
	}
	if want := (len(all) + 6) / 7; added+1 != want {
		t.Errorf("%d pages of 7 for %d likers; want %d", added+1, len(all), want)
	}
}

// listLikers pages through post's likers with limit, calling between (if not nil) after every
// page but the last, and checks each page: the count, and exactly limit likers on all but the
// last.
func listLikers(t *testing.T, rd *Reader, post string, limit int, between func()) []string {
	t.Helper()
	var out []string
	cursor := ""
	for page := 0; ; page++ {
		count, likers, next, err := rd.Likers(context.Background(), post, cursor, limit)
		if err != nil {
			t.Fatalf("page %d (cursor %q): %v", page, cursor, err)
		}
		if want, _ := rd.rdb.Get(context.Background(), keys.Count(post)).Int64(); count != want {
			t.Errorf("page %d: count %d; want %d", page, count, want)
		}
		out = append(out, likers...)
		if next == "" {
			if len(likers) > limit {
				t.Errorf("last page: %d likers; want at most %d", len(likers), limit)
			}
			return out
		}
		if len(likers) != limit {
			t.Errorf("page %d (cursor %q): %d likers; want %d", page, cursor, len(likers), limit)
		}
		if page > 1000 {
			t.Fatal("more than 1000 pages")
		}
		cursor = next
		if between != nil {
			between()
		}
	}
}

// TestLikersRefusesBadRequests: cursors no listing returns and limits out of range are refused
// with their sentinels; a post never liked lists nothing, with count 0 and no next page.
func TestLikersRefusesBadRequests(t *testing.T) {
	s, rdb := newStore(t)
	rd := NewReader(rdb, keys, 100)
	ctx := context.Background()
	if _, err := s.Like(ctx, "p", "u"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cursor string
		limit  int
		want   error
	}{
		{"cursor not a number", "x", 10, ErrCursor},
		{"negative chunk", "-1", 10, ErrCursor},
		{"rank not a number", "1.x", 10, ErrCursor},
		{"negative rank", "1.-2", 10, ErrCursor},
		{"empty rank", "1.", 10, ErrCursor},
		{"limit 0", "", 0, ErrLimit},
		{"limit above MaxPage", "", MaxPage + 1, ErrLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, users, next, err := rd.Likers(ctx, "p", tt.cursor, tt.limit); !errors.Is(err, tt.want) {
				t.Errorf("Likers(cursor %q, limit %d) = %v, %q, %v; want %v", tt.cursor, tt.limit, users, next, err, tt.want)
			}
		})
	}
	count, users, next, err := rd.Likers(ctx, "never", "", 10)
	if err != nil || count != 0 || len(users) != 0 || next != "" {
		t.Errorf("a post never liked: count %d, users %v, next %q, %v; want 0, none, \"\"", count, users, next, err)
	}
	count, users, next, err = rd.Likers(ctx, "p", "", MaxPage)
	if err != nil || count != 1 || len(users) != 1 || users[0] != "u" || next != "" {
		t.Errorf("a post of one like: count %d, users %v, next %q, %v; want 1, u, \"\"", count, users, next, err)
	}
}

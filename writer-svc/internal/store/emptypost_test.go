package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
	"github.com/likes/likes/writer-svc/internal/userlikes"
)

// The empty post's expiry of these tests: long enough that no key expires while a test reads it.
const emptyTTL = time.Hour

// emptyPostStore returns a store whose empty posts expire after ttl, on a fresh Redis, and a
// client of that Redis.
func emptyPostStore(t *testing.T, ttl time.Duration) (*store.Store, *redis.Client) {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	s := store.New(rdb, storetest.Keys, store.Options{EmptyPostTTL: ttl, TimelineRetention: time.Hour})
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, rdb
}

// postKeys returns the keys of post that stay (SCAN) with their TTL (-1: none), leaving out those
// that expire on their own whatever the post holds: batch keys (a few seconds), reaction gates
// (the reaction interval) and timeline minutes (TIMELINE_RETENTION).
func postKeys(t *testing.T, rdb *redis.Client, post string) map[string]time.Duration {
	t.Helper()
	ctx := context.Background()
	out := map[string]time.Duration{}
	iter := rdb.Scan(ctx, 0, keyPrefix(post)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.Contains(k, ":b:") || strings.Contains(k, ":rg:") || strings.Contains(k, ":tl:") {
			continue
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = ttl
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// keyPrefix is what every key of post starts with ("likes:{post}:").
func keyPrefix(post string) string { return strings.TrimSuffix(storetest.Keys.Count(post), "count") }

// checkTTLs fails t unless post's staying keys are exactly want and each has a TTL within
// (0, max], or none at all when max is 0.
func checkTTLs(t *testing.T, rdb *redis.Client, post string, want []string, maxTTL time.Duration) {
	t.Helper()
	got := postKeys(t, rdb, post)
	var names []string
	for k, ttl := range got {
		names = append(names, k)
		switch {
		case maxTTL == 0 && ttl != -1:
			t.Errorf("%s: TTL %v; want none (the post holds a like or a reaction)", k, ttl)
		case maxTTL > 0 && (ttl <= 0 || ttl > maxTTL):
			t.Errorf("%s: TTL %v; want within (0, %v] (the post is empty)", k, ttl, maxTTL)
		}
	}
	wantKeys := make([]string, len(want))
	for i, w := range want {
		wantKeys[i] = keyPrefix(post) + w
	}
	slices.Sort(names)
	slices.Sort(wantKeys)
	if !slices.Equal(names, wantKeys) {
		t.Errorf("post %s keeps %v; want %v", post, names, wantKeys)
	}
}

// unlikeAll unlikes post by users in one batch and checks each unlike changed it.
func unlikeAll(t *testing.T, s *store.Store, post string, users []string) {
	t.Helper()
	changes := make([]store.Change, len(users))
	for i, u := range users {
		changes[i] = store.Change{User: u, Unlike: true}
	}
	res, err := s.Apply(context.Background(), post, changes)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Changed {
			t.Fatalf("unlike %d of %s: %+v; want changed", i, post, r)
		}
	}
}

// TestEmptyPostExpires: a post liked then unliked, down to count 0 with no reactions, keeps its
// count, version and current chunk number only for EMPTY_POST_TTL (a post whose likers filled a
// chunk has the chunk number too); its likers chunks and dedup keys are gone already.
func TestEmptyPostExpires(t *testing.T) {
	s, rdb := emptyPostStore(t, emptyTTL)
	ctx := context.Background()
	if _, err := s.Like(ctx, "one", "u"); err != nil {
		t.Fatal(err)
	}
	checkTTLs(t, rdb, "one", []string{"count", "ver", "lk:0", "u:u"}, 0)
	if _, err := s.Unlike(ctx, "one", "u"); err != nil {
		t.Fatal(err)
	}
	checkTTLs(t, rdb, "one", []string{"count", "ver"}, emptyTTL)

	users, _ := storetest.LikeBatches(t, s, "many", "u", store.LikersChunk, 2)
	unlikeAll(t, s, "many", users)
	checkTTLs(t, rdb, "many", []string{"count", "ver", "lkc"}, emptyTTL)

	// With EMPTY_POST_TTL 0 an empty post keeps its keys for ever, as before.
	s0, rdb0 := emptyPostStore(t, 0)
	if _, err := s0.Like(ctx, "one", "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := s0.Unlike(ctx, "one", "u"); err != nil {
		t.Fatal(err)
	}
	checkTTLs(t, rdb0, "one", []string{"count", "ver"}, 0)
}

// TestEmptyPostLikedAgainKeeps: a like of an empty post clears the expiry of every key the post
// keeps, the current chunk number included (which the batch does not rewrite), and counts and
// lists its user as any like.
func TestEmptyPostLikedAgainKeeps(t *testing.T) {
	s, rdb := emptyPostStore(t, emptyTTL)
	ctx := context.Background()
	users, _ := storetest.LikeBatches(t, s, "p", "u", store.LikersChunk, 2)
	unlikeAll(t, s, "p", users)
	checkTTLs(t, rdb, "p", []string{"count", "ver", "lkc"}, emptyTTL)

	if res, err := s.Like(ctx, "p", "back"); err != nil || res != (store.Result{Count: 1, Changed: true}) {
		t.Fatalf("like of the empty post: %+v, %v; want count 1 changed", res, err)
	}
	checkTTLs(t, rdb, "p", []string{"count", "ver", "lkc", "lk:1", "u:back"}, 0)
	n, likers, _, err := userlikes.NewReader(rdb, storetest.Keys, 100).Likers(ctx, "p", "", 10)
	if err != nil || n != 1 || !slices.Equal(likers, []string{"back"}) {
		t.Errorf("likers of p: count %d, %v, %v; want 1 and [back]", n, likers, err)
	}
}

// TestReactedPostKeeps: reactions are data. A post with only reactions keeps its keys, and a
// reaction to an empty post clears their expiry though its like count stays 0.
func TestReactedPostKeeps(t *testing.T) {
	s, rdb := emptyPostStore(t, emptyTTL)
	ctx := context.Background()
	if _, err := s.React(ctx, "rx", "u", "clap"); err != nil {
		t.Fatal(err)
	}
	checkTTLs(t, rdb, "rx", []string{"ver", "rx"}, 0)

	if _, err := s.Like(ctx, "p", "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlike(ctx, "p", "u"); err != nil {
		t.Fatal(err)
	}
	checkTTLs(t, rdb, "p", []string{"count", "ver"}, emptyTTL)
	if res, err := s.React(ctx, "p", "u", "clap"); err != nil || !res.Changed {
		t.Fatalf("reaction: %+v, %v; want counted", res, err)
	}
	checkTTLs(t, rdb, "p", []string{"count", "ver", "rx"}, 0)
	// A like and its unlike now leave the post with its reaction: it keeps its keys.
	if _, err := s.Like(ctx, "p", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlike(ctx, "p", "v"); err != nil {
		t.Fatal(err)
	}
	checkTTLs(t, rdb, "p", []string{"count", "ver", "rx"}, 0)
}

// TestExpiredPostComesBack: once an empty post's keys expired, a like of it counts from 0 again
// under a version above every one the post had (versions follow Redis' clock), and announces the
// post's creation again.
func TestExpiredPostComesBack(t *testing.T) {
	s, rdb := emptyPostStore(t, 200*time.Millisecond)
	ctx := context.Background()
	if _, err := s.Like(ctx, "p", "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlike(ctx, "p", "u"); err != nil {
		t.Fatal(err)
	}
	old, err := rdb.Get(ctx, storetest.Keys.Version("p")).Int64()
	if err != nil {
		t.Fatal(err)
	}
	poll.Check(t, 10*time.Second, func() error {
		if keys := postKeys(t, rdb, "p"); len(keys) > 0 {
			return fmt.Errorf("post p still keeps %v", keys)
		}
		return nil
	})
	created := storetest.Subscribe(t, rdb, storetest.Keys.Created())
	if res, err := s.Like(ctx, "p", "u"); err != nil || res != (store.Result{Count: 1, Changed: true}) {
		t.Fatalf("like of the expired post: %+v, %v; want count 1 changed", res, err)
	}
	if ver, err := rdb.Get(ctx, storetest.Keys.Version("p")).Int64(); err != nil || ver <= old {
		t.Errorf("version after the post came back: %d, %v; want above its last %d", ver, err, old)
	}
	if m := storetest.Receive(t, created); m.Payload != "p" {
		t.Errorf("creation announced %q; want p", m.Payload)
	}
	checkTTLs(t, rdb, "p", []string{"count", "ver", "lk:0", "u:u"}, 0)
}

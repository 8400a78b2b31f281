package userlikes

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/batch"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// testIndexGrace is the Cluster stores' IndexGrace here: short, because a deletion on a Cluster
// waits it out.
const testIndexGrace = 300 * time.Millisecond

// indexRig is an Index, its Store and the client they run on: one Redis, or a one-node Redis
// Cluster (where the users' indexes are kept from outside the script, the store's clusterindex.go).
type indexRig struct {
	index   *Index
	store   *store.Store
	rdb     redis.UniversalClient
	cluster bool
}

// deployments runs test once on one Redis and once on a one-node Redis Cluster.
func deployments(t *testing.T, test func(t *testing.T, r indexRig)) {
	for _, cluster := range []bool{false, true} {
		name := "one Redis"
		if cluster {
			name = "Cluster"
		}
		t.Run(name, func(t *testing.T) { test(t, newIndexRig(t, cluster, testIndexGrace)) })
	}
}

// newIndexRig starts a Redis (a one-node Cluster that owns every slot when cluster is set) and
// returns an Index on it, its deletions through a Coalescer closed at the test's end.
func newIndexRig(t *testing.T, cluster bool, grace time.Duration) indexRig {
	t.Helper()
	var rdb redis.UniversalClient
	if cluster {
		rdb = storetest.OneNodeCluster(t)
	} else {
		rdb = redistest.Start(t).Client(t)
	}
	s := store.New(rdb, storetest.Keys, store.Options{Cluster: cluster, IndexGrace: grace})
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := batch.New(s, batch.Options{Size: 100, Timeout: 10 * time.Second}, batch.NewMetrics(prometheus.NewRegistry(), "test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return indexRig{index: NewIndex(rdb, storetest.Keys, IndexOptions{Cluster: cluster, Grace: grace, Unlike: c}), store: s, rdb: rdb, cluster: cluster}
}

// subscribeTo subscribes to channel as a fanout node of the deployment does (SSUBSCRIBE on a
// Cluster) and returns its messages once the subscription is confirmed.
func (r indexRig) subscribeTo(t *testing.T, channel string) <-chan *redis.Message {
	t.Helper()
	ctx := context.Background()
	var ps *redis.PubSub
	if r.cluster {
		ps = r.rdb.SSubscribe(ctx, channel)
	} else {
		ps = r.rdb.Subscribe(ctx, channel)
	}
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	return ps.Channel()
}

// likeEach likes each post by user, one call each, in order.
func (r indexRig) likeEach(t *testing.T, user string, posts ...string) {
	t.Helper()
	for _, p := range posts {
		if res, err := r.store.Like(context.Background(), p, user); err != nil || !res.Changed {
			t.Fatalf("%s likes %s: %+v, %v; want a new like", user, p, res, err)
		}
	}
}

func postIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// TestIndexListPages: a user's likes are listed newest first, in pages of the limit from the
// cursor each page returns, with their liked_at non-zero and never increasing, the last page's
// next cursor "". Likes made between two pages go above the cursor and do not shift the next.
func TestIndexListPages(t *testing.T) {
	deployments(t, func(t *testing.T, r indexRig) {
		ctx := context.Background()
		posts := postIDs("p", 25)
		r.likeEach(t, "alice", posts...)
		r.likeEach(t, "bob", "p3", "other")

		var got []LikedPost
		cursor := ""
		for page := 0; ; page++ {
			likes, next, err := r.index.List(ctx, "alice", cursor, 7)
			if err != nil {
				t.Fatalf("page %d (cursor %q): %v", page, cursor, err)
			}
			if next != "" && len(likes) != 7 {
				t.Errorf("page %d (cursor %q): %d likes; want 7", page, cursor, len(likes))
			}
			got = append(got, likes...)
			if next == "" {
				break
			}
			if page > 10 {
				t.Fatal("more than 10 pages of 7 for 25 likes")
			}
			r.likeEach(t, "alice", "late"+strconv.Itoa(page))
			cursor = next
		}
		if len(got) != len(posts) {
			t.Fatalf("listed %d likes; want %d", len(got), len(posts))
		}
		for i, l := range got {
			if want := posts[len(posts)-1-i]; l.PostID != want {
				t.Errorf("entry %d: %s; want %s (newest first)", i, l.PostID, want)
			}
			if l.LikedAt.IsZero() || l.LikedAt.After(time.Now().Add(time.Minute)) {
				t.Errorf("entry %d (%s): liked at %v; want near now", i, l.PostID, l.LikedAt)
			}
			if i > 0 && l.LikedAt.After(got[i-1].LikedAt) {
				t.Errorf("entry %d (%s) liked at %v, after entry %d's %v; want newest first", i, l.PostID, l.LikedAt, i-1, got[i-1].LikedAt)
			}
		}

		for _, tt := range []struct {
			cursor string
			limit  int
			want   error
		}{{"x", 7, ErrCursor}, {"0", 7, ErrCursor}, {"-3", 7, ErrCursor}, {"", 0, ErrLimit}, {"", MaxPage + 1, ErrLimit}} {
			if likes, next, err := r.index.List(ctx, "alice", tt.cursor, tt.limit); !errors.Is(err, tt.want) {
				t.Errorf("List(cursor %q, limit %d) = %v, %q, %v; want %v", tt.cursor, tt.limit, likes, next, err, tt.want)
			}
		}
		if likes, next, err := r.index.List(ctx, "nobody", "", MaxPage); err != nil || len(likes) != 0 || next != "" {
			t.Errorf("a user without likes: %v, %q, %v; want none and \"\"", likes, next, err)
		}
	})
}

// TestIndexListAfterUnlikesBelowTheCursor: unlikes of older posts between two pages shift the
// entries below the cursor down; a page that then comes out empty still returns a cursor, and
// the listing goes on to every like left (some listed twice, as the shift allows), never ending
// before one it has not shown.
func TestIndexListAfterUnlikesBelowTheCursor(t *testing.T) {
	deployments(t, func(t *testing.T, r indexRig) {
		ctx := context.Background()
		posts := postIDs("p", 25)
		r.likeEach(t, "alice", posts...)
		likes, cursor, err := r.index.List(ctx, "alice", "", 7)
		if err != nil || len(likes) != 7 || likes[0].PostID != "p24" || cursor == "" {
			t.Fatalf("first page: %v, %q, %v; want p24 to p18 and a cursor", likes, cursor, err)
		}
		for _, p := range posts[:14] {
			if res, err := r.store.Unlike(ctx, p, "alice"); err != nil || !res.Changed {
				t.Fatalf("unlike %s: %+v, %v", p, res, err)
			}
		}
		if r.cluster { // the unlikes' entries stay for the grace; readers drop them after it
			poll.Until(t, 10*time.Second, "the unliked posts' entries older than the grace", func() bool {
				_, _, _ = r.index.List(ctx, "alice", "", MaxPage)
				return r.rdb.ZCard(ctx, storetest.Keys.UserLikes("alice")).Val() == 11
			})
		}
		seen := make(map[string]bool)
		for page := 0; cursor != ""; page++ {
			if page > 10 {
				t.Fatal("more than 10 pages")
			}
			if likes, cursor, err = r.index.List(ctx, "alice", cursor, 7); err != nil {
				t.Fatal(err)
			}
			for _, l := range likes {
				seen[l.PostID] = true
			}
		}
		for _, p := range posts[14:18] {
			if !seen[p] {
				t.Errorf("%s, still liked and below the first page, was never listed", p)
			}
		}
	})
}

// TestIndexListHidesStaleEntries: on a Cluster a user's index may name a post the user does not
// like (the store's clusterindex.go). List never shows such an entry; it removes it once older
// than the grace, and leaves a younger one, which may belong to a like still on its way.
func TestIndexListHidesStaleEntries(t *testing.T) {
	const grace = time.Minute // long, so that the young entry stays young however slow the test
	r := newIndexRig(t, true, grace)
	ctx := context.Background()
	r.likeEach(t, "alice", "p1", "p2")
	key := storetest.Keys.UserLikes("alice")
	old := float64(time.Now().Add(-2 * grace).UnixMicro())
	young := float64(time.Now().UnixMicro())
	if err := r.rdb.ZAdd(ctx, key, redis.Z{Score: old, Member: "gone"}, redis.Z{Score: young, Member: "coming"}).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second listing finds the old entry gone, the young one still hidden
		likes, next, err := r.index.List(ctx, "alice", "", MaxPage)
		if err != nil || next != "" || len(likes) != 2 || likes[0].PostID != "p2" || likes[1].PostID != "p1" {
			t.Fatalf("List: %v, %q, %v; want p2, p1 and \"\"", likes, next, err)
		}
		if err := r.rdb.ZScore(ctx, key, "gone").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("the stale entry older than the grace is still in the index (%v)", err)
		}
		if err := r.rdb.ZScore(ctx, key, "coming").Err(); err != nil {
			t.Errorf("the entry younger than the grace was removed: %v", err)
		}
	}
	// Paging over stale entries: a page may come out short, but only "" ends the listing.
	likes, next, err := r.index.List(ctx, "alice", "", 1)
	if err != nil || len(likes) != 0 || next == "" {
		t.Fatalf("first page of 1 (the young stale entry): %v, %q, %v; want no likes and a next cursor", likes, next, err)
	}
	var all []string
	for cursor := next; cursor != ""; {
		likes, cursor, err = r.index.List(ctx, "alice", cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range likes {
			all = append(all, l.PostID)
		}
	}
	if strings.Join(all, ",") != "p2,p1" {
		t.Errorf("pages of 1 listed %v; want p2, p1", all)
	}
}

// TestIndexDelete: deleting a user's likes unlikes every post the index names, corrects and
// publishes each changed post's count, returns how many likes it removed (a stale entry is not
// one), leaves no trace of the user in the post's storetest.Keys or the index, and touches no one else's
// likes. A second deletion finds nothing.
func TestIndexDelete(t *testing.T) {
	deployments(t, func(t *testing.T, r indexRig) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		posts := postIDs("p", 10)
		r.likeEach(t, "alice", posts...)
		r.likeEach(t, "bob", posts[:4]...)
		r.likeEach(t, "carol", "p9", "q")
		stale := float64(time.Now().Add(-time.Hour).UnixMicro())
		if err := r.rdb.ZAdd(ctx, storetest.Keys.UserLikes("alice"), redis.Z{Score: stale, Member: "gone"}).Err(); err != nil {
			t.Fatal(err)
		}
		msgs := make(map[string]<-chan *redis.Message)
		for _, p := range posts {
			msgs[p] = r.subscribeTo(t, storetest.Keys.Channel(p))
		}

		n, err := r.index.Delete(ctx, "alice")
		if err != nil || n != len(posts) {
			t.Fatalf("Delete: %d, %v; want %d", n, err, len(posts))
		}
		for i, p := range posts {
			want := int64(0)
			if i < 4 || p == "p9" {
				want = 1
			}
			if got, err := r.store.Count(ctx, p); err != nil || got != want {
				t.Errorf("count of %s: %d, %v; want %d", p, got, err, want)
			}
			u, err := update.Parse([]byte(storetest.Receive(t, msgs[p]).Payload))
			if err != nil || u.PostID != p || u.Count != want {
				t.Errorf("published for %s: %+v, %v; want count %d", p, u, err, want)
			}
			if n := r.rdb.Exists(ctx, storetest.Keys.User(p, "alice")).Val(); n != 0 {
				t.Errorf("alice's dedup key of %s survived", p)
			}
			if err := r.rdb.LPos(ctx, storetest.Keys.Likers(p, 0), "alice", redis.LPosArgs{}).Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("alice still among %s's likers (%v)", p, err)
			}
		}
		if n := r.rdb.Exists(ctx, storetest.Keys.UserLikes("alice")).Val(); n != 0 {
			t.Errorf("alice's index survived: %v", r.rdb.ZRange(ctx, storetest.Keys.UserLikes("alice"), 0, -1).Val())
		}
		for user, liked := range map[string][]string{"bob": posts[:4], "carol": {"p9", "q"}} {
			for _, p := range liked {
				if n := r.rdb.Exists(ctx, storetest.Keys.User(p, user)).Val(); n != 1 {
					t.Errorf("%s's like of %s is gone", user, p)
				}
				if err := r.rdb.LPos(ctx, storetest.Keys.Likers(p, 0), user, redis.LPosArgs{}).Err(); err != nil {
					t.Errorf("%s is no longer among %s's likers: %v", user, p, err)
				}
			}
			likes, _, err := r.index.List(ctx, user, "", MaxPage)
			if err != nil || len(likes) != len(liked) {
				t.Errorf("%s's likes: %v, %v; want %v", user, likes, err, liked)
			}
		}

		if n, err := r.index.Delete(ctx, "alice"); err != nil || n != 0 {
			t.Errorf("second Delete: %d, %v; want 0", n, err)
		}
		if likes, next, err := r.index.List(ctx, "alice", "", MaxPage); err != nil || len(likes) != 0 || next != "" {
			t.Errorf("alice's likes after Delete: %v, %q, %v; want none", likes, next, err)
		}
	})
}

// TestIndexDeleteLikesVersionedAhead: on one Redis an index entry's score is its like's version,
// which runs ahead of the writer's clock when the post's version is ahead of Redis' clock (a
// clock that stepped back, a failover to a node behind: TestVersionNeverGoesBack). A deletion
// removes such likes too, and ends on an entry it cannot remove (one written by hand, in the
// future) instead of looping on it.
func TestIndexDeleteLikesVersionedAhead(t *testing.T) {
	r := newIndexRig(t, false, testIndexGrace)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ahead := time.Now().Add(time.Hour)
	if err := r.rdb.Set(ctx, storetest.Keys.Version("ahead"), ahead.UnixMicro(), 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.likeEach(t, "alice", "ahead", "now")
	future := float64(ahead.Add(time.Hour).UnixMicro())
	if err := r.rdb.ZAdd(ctx, storetest.Keys.UserLikes("alice"), redis.Z{Score: future, Member: "never"}).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := r.index.Delete(ctx, "alice")
	if err != nil || n != 2 {
		t.Fatalf("Delete: %d, %v; want 2", n, err)
	}
	for _, p := range []string{"ahead", "now"} {
		if got, err := r.store.Count(ctx, p); err != nil || got != 0 {
			t.Errorf("count of %s: %d, %v; want 0", p, got, err)
		}
		if n := r.rdb.Exists(ctx, storetest.Keys.User(p, "alice")).Val(); n != 0 {
			t.Errorf("alice's like of %s survived the deletion", p)
		}
	}
	if likes, _, err := r.index.List(ctx, "alice", "", MaxPage); err != nil || len(likes) != 0 {
		t.Errorf("alice's likes after Delete: %v, %v; want none", likes, err)
	}
}

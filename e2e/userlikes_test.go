package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestUserLikesEndToEnd runs a user's likes on request through writer-svc and a fanout-svc node,
// on one Redis and on a 3-master Cluster, with posts on every shard: GET /me/likes lists every
// post the user liked, newest first; GET /likes/{post}/users lists each post's likers; DELETE
// /me/likes unlikes them all, each post's count is corrected and a viewer connected all along
// receives every changed post's new count; a second DELETE removes 0; other users' likes and
// counts are unchanged.
func TestUserLikesEndToEnd(t *testing.T) {
	for _, backend := range []struct {
		name  string
		start func(t *testing.T) (redisURL string, env []string, posts []string)
	}{
		{"single", func(t *testing.T) (string, []string, []string) {
			return redistest.Start(t).URL, nil, []string{"post0", "post1", "post2"}
		}},
		{"cluster", func(t *testing.T) (string, []string, []string) {
			c := redistest.StartCluster(t, 3)
			return c.Nodes[0].URL, []string{"REDIS_CLUSTER_ADDRS=" + c.AddrList()}, clusterPostPerNode(t, c, rediskeys.New(""))
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			redisURL, env, onShards := backend.start(t)
			writer := StartWriter(t, redisURL, env...)
			fanout := StartFanout(t, redisURL, env...)
			runUserLikes(t, writer, fanout, append(onShards, "extra0", "extra1", "extra2"))
		})
	}
}

func runUserLikes(t *testing.T, writer, fanout *Proc, posts []string) {
	viewer := Watch(t, fanout.URL+"/sse?posts="+strings.Join(posts, ","))
	poll.Until(t, 10*time.Second, "viewer connected", viewer.Connected)

	// alice likes every post in order; bob likes two of them after her, carol one.
	counts := map[string]int64{}
	for _, p := range posts {
		clusterLike(t, writer, p, "alice")
		counts[p]++
	}
	others := map[string][]string{"bob": {posts[0], posts[3]}, "carol": {posts[1]}}
	for user, liked := range others {
		for _, p := range liked {
			clusterLike(t, writer, p, user)
			counts[p]++
		}
	}
	for _, p := range posts {
		WaitCount(t, 10*time.Second, p, counts[p], viewer)
	}

	alice := "X-User-ID: alice"
	newestFirst := slices.Clone(posts)
	slices.Reverse(newestFirst)
	likes, pages := clienttest.UserLikes(t, writer.URL, "/me/likes", 4, alice)
	if got := clienttest.PostIDs(likes); !slices.Equal(got, newestFirst) || len(pages) != 2 {
		t.Errorf("alice's likes %v in %d pages; want %v in 2 pages of 4", got, len(pages), newestFirst)
	}
	if users, pages := clienttest.Likers(t, writer.URL, posts[0], 0); !slices.Equal(clienttest.UserIDs(users), []string{"bob", "alice"}) || pages[0].Count != 2 {
		t.Errorf("likers of %s: %v, count %d; want [bob alice], 2", posts[0], clienttest.UserIDs(users), pages[0].Count)
	}

	if got := clienttest.EraseLikes(t, writer.URL, "/me/likes", alice); got != (clienttest.Erased{UserID: "alice", Removed: len(posts)}) {
		t.Fatalf("DELETE /me/likes: %+v; want alice, %d removed", got, len(posts))
	}
	for _, p := range posts {
		counts[p]--
		WaitCount(t, 10*time.Second, p, counts[p], viewer)
		if got := clienttest.CountOf(t, writer.URL, p); got != counts[p] {
			t.Errorf("GET /count/%s = %d after alice's erasure; want %d", p, got, counts[p])
		}
	}
	if _, backwards, connects := viewer.Stats(); backwards != 0 || connects != 1 {
		t.Errorf("viewer: %d updates went backwards, %d connects; want 0 and 1 (the new counts were published, not read on a reconnect)", backwards, connects)
	}
	if likes, _ := clienttest.UserLikes(t, writer.URL, "/me/likes", 0, alice); len(likes) != 0 {
		t.Errorf("alice's likes after the erasure: %v; want none", clienttest.PostIDs(likes))
	}
	for user, liked := range others {
		want := slices.Clone(liked)
		slices.Reverse(want)
		if likes, _ := clienttest.UserLikes(t, writer.URL, "/me/likes", 0, "X-User-ID: "+user); !slices.Equal(clienttest.PostIDs(likes), want) {
			t.Errorf("%s's likes after alice's erasure: %v; want %v", user, clienttest.PostIDs(likes), want)
		}
	}
	for _, p := range posts {
		var want []string // bob's and carol's posts are apart: at most one liker is left
		for user, liked := range others {
			if slices.Contains(liked, p) {
				want = append(want, user)
			}
		}
		if users, pages := clienttest.Likers(t, writer.URL, p, 0); !slices.Equal(clienttest.UserIDs(users), want) || pages[0].Count != counts[p] {
			t.Errorf("likers of %s after alice's erasure: %v, count %d; want %v, %d", p, clienttest.UserIDs(users), pages[0].Count, want, counts[p])
		}
	}

	if got := clienttest.EraseLikes(t, writer.URL, "/me/likes", alice); got.Removed != 0 {
		t.Errorf("second DELETE /me/likes removed %d; want 0", got.Removed)
	}
	for _, p := range posts {
		if got := clienttest.CountOf(t, writer.URL, p); got != counts[p] {
			t.Errorf("GET /count/%s = %d after the second erasure; want %d", p, got, counts[p])
		}
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/redistest"
)

// startClusterStack is the failover topology of TestFailover on a Redis Cluster instead of
// Sentinel: one writer (REDIS_ACK_REPLICAS=acks) and two fanout nodes seeded with every node of
// the cluster, and failoverViewers viewers of each of failoverPosts posts (named prefix0...) on
// each fanout node, all connected at count 0. The returned stack has no Sentinel.
func startClusterStack(t *testing.T, c *redistest.Cluster, prefix string, acks int) *failoverStack {
	t.Helper()
	env := "REDIS_CLUSTER_ADDRS=" + c.AddrList()
	st := &failoverStack{viewers: map[string][]*Viewer{},
		writer: StartWriter(t, c.Nodes[0].URL, env, "REDIS_ACK_REPLICAS="+strconv.Itoa(acks)),
		nodes:  []*Proc{StartFanout(t, c.Nodes[0].URL, env), StartFanout(t, c.Nodes[0].URL, env)}}
	for i := range failoverPosts {
		post := prefix + strconv.Itoa(i)
		st.posts = append(st.posts, post)
		for _, n := range st.nodes {
			for range failoverViewers {
				st.viewers[post] = append(st.viewers[post], Watch(t, n.URL+"/sse/"+post))
			}
		}
	}
	for _, post := range st.posts {
		WaitCount(t, 10*time.Second, post, 0, st.viewers[post]...)
	}
	return st
}

// checkClusterStored is checkStored on a cluster: each post is read on the master that owns it
// now. extra adds users whose likes were stored outside the load (seeded), as acknowledged.
func checkClusterStored(t *testing.T, c *redistest.Cluster, posts []string, tally likeTally, extra map[string][]string) map[string]int64 {
	t.Helper()
	keys := rediskeys.New("")
	counts := map[string]int64{}
	lost := 0
	for _, post := range posts {
		acked := tally.ackedUsers[post]
		for _, u := range extra[post] {
			acked[u] = true
		}
		count, users := storedLikes(t, c.NodeFor(keys.Count(post)).Client(t), post)
		counts[post] = count
		lost += checkPost(t, post, count, users, acked, tally.failedUsers[post], true)
	}
	t.Logf("%d acknowledged likes lost", lost)
	return counts
}

// checkReadBack checks through the writer that every like of post acknowledged by the load
// reads back as liked (GET /likes as its user), 8 requests at a time.
func checkReadBack(t *testing.T, w *Proc, post string, tally likeTally) {
	t.Helper()
	users := make(chan string)
	var bad atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { // exits when users is closed and drained
			defer wg.Done()
			for u := range users {
				if err := readsLiked(w.URL, post, u); err != nil && bad.Add(1) <= 3 {
					t.Errorf("GET /likes?posts=%s as %s, acknowledged: %v; want 200 liked", post, u, err)
				}
			}
		}()
	}
	for u := range tally.ackedUsers[post] {
		users <- u
	}
	close(users)
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("%d of %d acknowledged likes of %s do not read back as liked", n, len(tally.ackedUsers[post]), post)
	}
}

// readsLiked asks the writer whether user likes post (GET /likes), and says why not when not. It
// returns an error rather than failing the test, so that goroutines may call it.
func readsLiked(writerURL, post, user string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, writerURL+"/likes?posts="+post, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-User-ID", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct{ Posts []readPost }
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	if len(r.Posts) != 1 || !r.Posts[0].Liked {
		return fmt.Errorf("%+v", r.Posts)
	}
	return nil
}

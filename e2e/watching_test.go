package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// watchInterval is the nodes' WATCHING_INTERVAL in these tests: short, so that three intervals
// are under a second.
const watchInterval = 300 * time.Millisecond

// watchHeartbeat is the nodes' HEARTBEAT_INTERVAL in these tests. A changed number reaches a
// viewer with its next count or, at the latest, its next heartbeat; these viewers get few counts,
// so the heartbeat bounds the delivery, and it is short so that the tests need not wait 15 s.
const watchHeartbeat = 100 * time.Millisecond

// watchEnv is the environment of the nodes in these tests.
var watchEnv = []string{"WATCHING_INTERVAL=" + watchInterval.String(), "HEARTBEAT_INTERVAL=" + watchHeartbeat.String()}

// watchViewers connects n viewers of url and waits until each holds its stream (has a count).
func watchViewers(t *testing.T, url, post string, n int) []*Viewer {
	t.Helper()
	vs := make([]*Viewer, n)
	for i := range vs {
		vs[i] = Watch(t, url)
	}
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d viewers of %s connected", n, url), func() bool {
		for _, v := range vs {
			if _, ok := v.Count(post); !ok {
				return false
			}
		}
		return true
	})
	return vs
}

// waitWatching waits at most four intervals and two heartbeats for every viewer to show want
// watching post: the total settles within two or three intervals (a node reports a quarter into
// one, and readers read the one before), the next heartbeat carries it, and the rest is slack for
// a loaded machine (a run beside other work took 1.1 s).
func waitWatching(t *testing.T, post string, want int64, viewers ...[]*Viewer) {
	t.Helper()
	start := time.Now()
	poll.Until(t, 4*watchInterval+2*watchHeartbeat, fmt.Sprintf("every viewer to show %d watching %s within four intervals and two heartbeats", want, post), func() bool {
		for _, group := range viewers {
			for _, v := range group {
				if n, ok := v.Watching(post); !ok || n != want {
					return false
				}
			}
		}
		return true
	})
	t.Logf("%d watching %s: every viewer showed it after %v", want, post, time.Since(start).Round(time.Millisecond))
}

// TestWatchingAcrossThreeNodes: 100, 200 and 300 viewers of one post on three nodes all see 600
// watching within four intervals and two heartbeats; when viewers leave and when a node is killed,
// every remaining viewer sees the true number as soon. A multi-post stream gets each post's
// number, and no watching event moves a stream's Last-Event-ID.
func TestWatchingAcrossThreeNodes(t *testing.T) {
	rs := redistest.Start(t)
	writer := StartWriter(t, rs.URL)
	a := StartFanout(t, rs.URL, watchEnv...)
	b := StartFanout(t, rs.URL, watchEnv...)
	c := StartFanout(t, rs.URL, watchEnv...)
	if code, body := doRequest(t, "POST", writer.URL+"/like/w", "alice"); code != 200 {
		t.Fatalf("like: %d %s", code, body)
	}
	onA := watchViewers(t, a.URL+"/sse/w", "w", 100)
	onB := watchViewers(t, b.URL+"/sse/w", "w", 200)
	onC := watchViewers(t, c.URL+"/sse/w", "w", 300)
	waitWatching(t, "w", 600, onA, onB, onC)

	// A feed on node A follows w and x; one viewer of x on node C. Only posts that exist (a like
	// or a reaction gave them a version) are counted: x is liked first.
	if code, body := doRequest(t, "POST", writer.URL+"/like/x", "alice"); code != 200 {
		t.Fatalf("like: %d %s", code, body)
	}
	feed := Watch(t, a.URL+"/sse?posts=w,x")
	onlyX := Watch(t, c.URL+"/sse/x")
	waitWatching(t, "w", 601, onA, onB, onC, []*Viewer{feed})
	waitWatching(t, "x", 2, []*Viewer{feed, onlyX})

	// 150 viewers leave node C.
	for _, v := range onC[150:] {
		v.Close()
	}
	onC = onC[:150]
	waitWatching(t, "w", 451, onA, onB, onC, []*Viewer{feed})

	// Node B dies; its share must go within three intervals without anyone cleaning up.
	b.Kill()
	for _, v := range onB {
		v.Close()
	}
	waitWatching(t, "w", 251, onA, onC, []*Viewer{feed})

	// Watching events carried no id: each stream still resumes from its post's version, the
	// one like's.
	ver, err := rs.Client(t).Get(context.Background(), rediskeys.New("").Version("w")).Result()
	if err != nil {
		t.Fatal(err)
	}
	verX, err := rs.Client(t).Get(context.Background(), rediskeys.New("").Version("x")).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range append(append(onA, onC...), onlyX) {
		id, withID := v.LastID()
		want := ver
		if v == onlyX {
			want = verX
		}
		if id != want || withID != 0 {
			t.Fatalf("viewer %d: Last-Event-ID %q, %d watching events with an id; want %q and none", i, id, withID, want)
		}
	}
	if id, withID := feed.LastID(); id == "" || withID != 0 {
		t.Fatalf("feed: Last-Event-ID %q, %d watching events with an id; want a version and none", id, withID)
	}
	// Counts still flow to readers that listen to count events only.
	doRequest(t, "POST", writer.URL+"/like/w", "bob")
	WaitCount(t, 5*time.Second, "w", 2, append(onA, feed)...)
}

// TestWatchingOnACluster: two nodes on a 3-master Redis Cluster, a post owned by each master,
// 2 single-post viewers per post per node plus one feed of all three per node: every viewer sees
// each post's total (4 singles + 2 feeds = 6) within four intervals and two heartbeats.
func TestWatchingOnACluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	env := append([]string{"REDIS_CLUSTER_ADDRS=" + cluster.AddrList()}, watchEnv...)
	nodes := []*Proc{StartFanout(t, cluster.Nodes[0].URL, env...), StartFanout(t, cluster.Nodes[0].URL, env...)}
	posts := clusterPostPerNode(t, cluster, rediskeys.New(""))
	for _, p := range posts { // they exist, as after a like: only posts that exist are counted
		if err := cluster.Client(t).Set(context.Background(), rediskeys.New("").Version(p), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var all []*Viewer
	for _, n := range nodes {
		all = append(all, Watch(t, n.URL+"/sse?posts="+posts[0]+","+posts[1]+","+posts[2]))
		for _, p := range posts {
			all = append(all, watchViewers(t, n.URL+"/sse/"+p, p, 2)...)
		}
	}
	poll.Until(t, 10*time.Second, "every viewer connected", func() bool {
		for _, v := range all {
			if !v.Connected() {
				return false
			}
		}
		return true
	})
	for _, p := range posts {
		var of []*Viewer
		for _, v := range all {
			if _, ok := v.Count(p); ok {
				of = append(of, v)
			}
		}
		waitWatching(t, p, 6, of)
	}
}

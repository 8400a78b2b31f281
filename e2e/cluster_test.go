package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestClusterLikesReachViewersAcrossShards runs writer-svc and two fanout-svc nodes on a real
// 3-master Redis Cluster (REDIS_CLUSTER_ADDRS: SPUBLISH and sharded subscriptions). Likes on posts
// owned by three different masters reach viewers on both fanout nodes, each owner carries one
// subscription per fanout node however many viewers there are, and after one master crashes and
// restarts the viewers converge again on the counts that new likes produce.
func TestClusterLikesReachViewersAcrossShards(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	env := "REDIS_CLUSTER_ADDRS=" + cluster.AddrList()
	writer := StartWriter(t, cluster.Nodes[0].URL, env)
	nodes := []*Proc{StartFanout(t, cluster.Nodes[0].URL, env), StartFanout(t, cluster.Nodes[0].URL, env)}

	keys := rediskeys.New("")
	posts := clusterPostPerNode(t, cluster, keys)
	var viewers []*Viewer
	watching := map[string][]*Viewer{} // post -> its viewers on both nodes
	for _, n := range nodes {
		multi := Watch(t, n.URL+"/sse?posts="+posts[0]+","+posts[1]+","+posts[2])
		viewers = append(viewers, multi)
		for _, p := range posts {
			single := []*Viewer{Watch(t, n.URL+"/sse/"+p), Watch(t, n.URL+"/sse/"+p)}
			viewers = append(viewers, single...)
			watching[p] = append(watching[p], append(single, multi)...)
		}
	}
	poll.Until(t, 10*time.Second, "every viewer connected", func() bool {
		for _, v := range viewers {
			if !v.Connected() {
				return false
			}
		}
		return true
	})

	for i, p := range posts {
		for u := 0; u <= i; u++ {
			clusterLike(t, writer, p, "user"+strconv.Itoa(u))
		}
	}
	for i, p := range posts {
		WaitCount(t, 10*time.Second, p, int64(i+1), watching[p]...)
		owner := cluster.Nodes[i]
		if got := clusterShardSubscribers(t, owner, keys.Channel(p)); got != int64(len(nodes)) {
			t.Errorf("sharded subscribers of %s on its owner = %d; want %d, one per fanout node", p, got, len(nodes))
		}
	}

	const victim = 1
	cluster.Kill(victim)
	cluster.Restart(victim)
	for i, p := range posts {
		clusterLike(t, writer, p, "after-restart")
		want := int64(i + 2)
		if got := clusterStoredCount(t, writer, p); got != want {
			t.Fatalf("stored count of %s after the restart = %d; want %d", p, got, want)
		}
		WaitCount(t, 20*time.Second, p, want, watching[p]...)
	}
	for i, v := range viewers {
		if _, backwards, connects := v.Stats(); backwards != 0 || connects != 1 {
			t.Errorf("viewer %d: %d updates went backwards, %d connects; want 0 and 1 (the node, not the viewer, resubscribes)", i, backwards, connects)
		}
	}
	for i, n := range nodes {
		if got := clusterMetric(t, n, "likes_fanout_resubscribes_total"); got < 1 {
			t.Errorf("fanout node %d resubscribed %v times after the master restart; want >= 1", i, got)
		}
	}
}

// clusterMetric returns the value of an unlabelled metric from a node's /metrics.
func clusterMetric(t *testing.T, n *Proc, name string) float64 {
	t.Helper()
	status, body := doRequest(t, http.MethodGet, n.URL+"/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics = %d", status)
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("metric %s not found in /metrics", name)
	return 0
}

// clusterPostPerNode returns one post id owned by each node of the cluster, in node order.
func clusterPostPerNode(t *testing.T, c *redistest.Cluster, keys rediskeys.Scheme) []string {
	t.Helper()
	posts := make([]string, len(c.Nodes))
	found := 0
	for i := 0; i < 1000 && found < len(posts); i++ {
		p := "post" + strconv.Itoa(i)
		if n := c.Index(c.NodeFor(keys.Channel(p))); posts[n] == "" {
			posts[n] = p
			found++
		}
	}
	if found < len(posts) {
		t.Fatalf("found posts on %d of %d nodes", found, len(posts))
	}
	return posts
}

// clusterLike likes post as user, retrying for a while on 503: right after a master restarts the
// writer may briefly find its slots unavailable, and must say so rather than claim success.
func clusterLike(t *testing.T, writer *Proc, post, user string) {
	t.Helper()
	var status int
	var body string
	poll.Until(t, 20*time.Second, "writer to accept a like of "+post, func() bool {
		status, body = doRequest(t, http.MethodPost, writer.URL+"/like/"+post, user)
		if status == http.StatusServiceUnavailable {
			time.Sleep(100 * time.Millisecond)
			return false
		}
		return true
	})
	var res struct {
		Liked bool `json:"liked"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || !res.Liked {
		t.Fatalf("POST /like/%s as %s = %d %s; want 200 liked", post, user, status, body)
	}
}

// clusterStoredCount returns the writer's count of post.
func clusterStoredCount(t *testing.T, writer *Proc, post string) int64 {
	t.Helper()
	status, body := doRequest(t, http.MethodGet, writer.URL+"/count/"+post, "")
	var res struct {
		Count int64 `json:"count"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
		t.Fatalf("GET /count/%s = %d %s; want 200", post, status, body)
	}
	return res.Count
}

// clusterShardSubscribers returns how many clients of node n hold a sharded subscription to ch.
func clusterShardSubscribers(t *testing.T, n *redistest.Server, ch string) int64 {
	t.Helper()
	res, err := n.Do("PUBSUB", "SHARDNUMSUB", ch)
	list, _ := res.([]any)
	if err != nil || len(list) != 2 {
		t.Fatalf("PUBSUB SHARDNUMSUB %s on %s: %v %v", ch, n.Addr, res, err)
	}
	count, _ := list[1].(int64)
	return count
}

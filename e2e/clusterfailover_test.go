package e2e

import (
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// clusterNodeTimeout is the failover cluster's cluster-node-timeout: a master silent that long is
// suspected, and its replica promoted about a second later. Short, so the test stays fast; long
// enough that a loaded 2-core machine does not fail over a healthy master.
const clusterNodeTimeout = "1500"

// TestClusterFailover is TestFailover on a Redis Cluster: 3 masters with a replica each, one
// writer with REDIS_ACK_REPLICAS=1 and two fanout nodes, 16 clients liking 10 posts as fresh
// users while viewers watch every post on both nodes. Mid-load the master of one post is killed
// (kill -9) and the cluster promotes its replica; the killed node is then restarted and rejoins as
// the promoted master's replica (with one replica per master, the promoted master has none to
// confirm WAIT 1 until then). Then, as in TestFailover, every acknowledged
// like is on the promoted master (WAIT went to the master that ran the script), each post's
// count lies between acknowledged and acknowledged + failed and equals its dedup keys, likes are
// acknowledged again within 10 s, no fanout node shed a viewer and every viewer converges.
func TestClusterFailover(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3, 1, "--cluster-node-timeout", clusterNodeTimeout)
	st := startClusterStack(t, c, "cf", 1)
	keys := rediskeys.New("")
	old := c.NodeFor(keys.Count(st.posts[0]))

	gauge := watchViewerGauge(st.nodes, failoverPosts*failoverViewers)
	defer gauge.Stop()
	load := startLikeLoad(st.writer.URL, st.posts)
	defer load.Stop()
	poll.Until(t, 10*time.Second, "500 likes acknowledged before the fault", func() bool {
		return load.acked(time.Time{}) >= 500
	})
	old.Kill()
	faultAt := time.Now()
	promoted := c.WaitPromoted(old)
	t.Logf("replica %s promoted %.2f s after the kill of %s", promoted.Addr, time.Since(faultAt).Seconds(), old.Addr)
	// The promoted master has no replica of its own: until the killed node is back (as a
	// supervisor would restart it) and has synced as its replica, WAIT 1 cannot be satisfied and
	// that shard's likes get 503. The other shards take likes as soon as the cluster is ok again.
	c.Restart(c.Index(old))
	old.WaitReplicating(t)
	t.Logf("killed master back as a replica of %s %.2f s after the kill", promoted.Addr, time.Since(faultAt).Seconds())
	poll.Until(t, failoverRecovery-time.Since(faultAt), "a like sent after the fault acknowledged", func() bool {
		return load.acked(faultAt) > 0
	})
	poll.Until(t, 10*time.Second, "5 likes of every post acknowledged after the fault", func() bool {
		return load.everyPostAcked(faultAt, 5)
	})
	tally := checkAnswers(t, 1, load.Stop(), faultAt)
	if owner := c.NodeFor(keys.Count(st.posts[0])); owner != promoted {
		t.Errorf("%s is on %s after the failover; want the promoted replica %s", st.posts[0], owner.Addr, promoted.Addr)
	}
	counts := checkClusterStored(t, c, st.posts, tally, nil)
	checkWriterReads(t, st.writer, tally, counts)
	for _, post := range st.posts {
		WaitCount(t, 10*time.Second, post, counts[post], st.viewers[post]...)
	}
	checkViewersKept(t, st, gauge)
}

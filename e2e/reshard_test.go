package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// reshardSeeded is how many likes the moved post holds before the load starts (stored directly,
// one dedup key each): a popular post, whose slot takes several MIGRATE batches to move.
const reshardSeeded = 12000

// TestReshard is the reshard test: a 3-master Redis Cluster, one writer and two fanout
// nodes, 16 clients liking 10 posts as fresh users while viewers watch every post on both nodes.
// Mid-load the slot of one post (seeded with 12,000 likes) moves to another master with the
// slotmove command. Then every like acknowledged reads back as liked, each post's count lies
// between its acknowledged likes and acknowledged + failed and equals its dedup keys, no like of
// the moved post was answered 503 (they wait for the move instead), the fanout nodes' sharded
// subscriptions followed the slot, no viewer was shed and every viewer converges. It logs how
// long the slot was migrating and how long likes of the moved post waited.
func TestReshard(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	st := startClusterStack(t, c, "rs", 0)
	keys := rediskeys.New("")
	moved := st.posts[0]
	seeded := seedLikes(t, c.Client(t), keys, moved, reshardSeeded)
	src := c.NodeFor(keys.Count(moved))
	dst := c.Nodes[(c.Index(src)+1)%len(c.Nodes)]
	bin := Bin(t, "slotmove")

	gauge := watchViewerGauge(st.nodes, failoverPosts*failoverViewers)
	defer gauge.Stop()
	load := startLikeLoad(st.writer.URL, st.posts)
	defer load.Stop()
	poll.Until(t, 10*time.Second, "500 likes acknowledged before the move", func() bool {
		return load.acked(time.Time{}) >= 500
	})
	began := time.Now()
	out, err := exec.Command(bin, "-seed", c.Nodes[0].Addr, "-post", moved, "-to", dst.Addr).CombinedOutput()
	ended := time.Now()
	if err != nil {
		t.Fatalf("slotmove: %v\n%s", err, out)
	}
	t.Logf("slotmove: %s", out)
	checkMoveOutput(t, string(out), reshardSeeded)
	poll.Until(t, 10*time.Second, "5 likes of every post acknowledged after the move", func() bool {
		return load.everyPostAcked(ended, 5)
	})
	answers := load.Stop()
	tally := tallyLikes(answers, began)
	for _, bad := range tally.odd {
		t.Errorf("answer %s; want 200 liked, 503 or a transport error", bad)
	}
	checkMoveWait(t, answers, moved, began, ended)

	if owner := c.NodeFor(keys.Count(moved)); owner != dst {
		t.Fatalf("%s is on %s after the move; want %s", moved, owner.Addr, dst.Addr)
	}
	counts := checkClusterStored(t, c, st.posts, tally, map[string][]string{moved: seeded})
	checkReadBack(t, st.writer, moved, tally)
	checkWriterReads(t, st.writer, tally, counts)
	for _, post := range st.posts {
		WaitCount(t, 10*time.Second, post, counts[post], st.viewers[post]...)
	}
	poll.Until(t, 10*time.Second, "both fanout nodes subscribed on the new owner only", func() bool {
		return clusterShardSubscribers(t, dst, keys.Channel(moved)) == int64(len(st.nodes)) &&
			clusterShardSubscribers(t, src, keys.Channel(moved)) == 0
	})
	checkViewersKept(t, st, gauge)
}

// seedLikes stores n likes of post (users seed-0...) directly, in the writer's key layout, and
// returns their users.
func seedLikes(t *testing.T, cc *redis.ClusterClient, keys rediskeys.Scheme, post string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	users := make([]string, 0, n)
	for start := 0; start < n; start += 1000 {
		var kv []any
		for i := start; i < min(start+1000, n); i++ {
			u := "seed-" + strconv.Itoa(i)
			users = append(users, u)
			kv = append(kv, keys.User(post, u), "1")
		}
		if err := cc.MSet(ctx, kv...).Err(); err != nil {
			t.Fatalf("seed likes of %s: %v", post, err)
		}
	}
	if err := cc.Set(ctx, keys.Count(post), n, 0).Err(); err != nil {
		t.Fatalf("seed count of %s: %v", post, err)
	}
	return users
}

var moveLine = regexp.MustCompile(`(\d+) keys in (\d+) MIGRATE calls; migrating for (\S+)`)

// checkMoveOutput checks that slotmove moved at least the seeded keys in batches of 10,000 (its
// default), and logs how long the slot was migrating.
func checkMoveOutput(t *testing.T, out string, atLeast int) {
	t.Helper()
	m := moveLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("slotmove output %q: want its summary line", out)
	}
	moved, _ := strconv.Atoi(m[1])
	calls, _ := strconv.Atoi(m[2])
	if moved < atLeast || calls != (moved+9999)/10000 {
		t.Errorf("slotmove moved %d keys in %d calls; want at least %d keys, in batches of 10000", moved, calls, atLeast)
	}
}

// checkMoveWait checks that no like of the moved post was refused while its slot moved, and logs
// how long the likes sent during the move took to be answered: the window likes waited.
func checkMoveWait(t *testing.T, answers []likeAnswer, post string, began, ended time.Time) {
	t.Helper()
	var during, unavailable int
	var slowest time.Duration
	for _, a := range answers {
		if a.post != post {
			continue
		}
		if a.status == http.StatusServiceUnavailable || a.status == 0 {
			unavailable++
		}
		if a.at.After(began) && a.sent.Before(ended) {
			during++
			slowest = max(slowest, a.at.Sub(a.sent))
		}
	}
	t.Logf("likes of %s answered during the %.3f s slotmove run: %d, the slowest in %.3f s; %s",
		post, ended.Sub(began).Seconds(), during, slowest.Seconds(), fmt.Sprintf("%d failed", unavailable))
	if unavailable > 0 {
		t.Errorf("%d likes of the moved post %s failed; want 0 (they wait for the move)", unavailable, post)
	}
}

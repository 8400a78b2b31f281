package watching

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/update"
)

var keys = rediskeys.New("test:")

// testInterval is short so that tests wait a few hundred milliseconds, not seconds.
const testInterval = 100 * time.Millisecond

// node is one fanout node as the counter sees it: its local viewers (set by the test) and the
// totals it was handed.
type node struct {
	mu      sync.Mutex
	viewers map[string]int
	got     map[string]update.Watching // newest total per post
	counter *Counter
	stop    context.CancelFunc
	done    chan struct{}
}

func (n *node) LocalViewers(fn func(string, int)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for post, v := range n.viewers {
		if v > 0 {
			fn(post, v)
		}
	}
}

func (n *node) PublishWatching(w update.Watching) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got[w.PostID] = w
}

func (n *node) set(post string, viewers int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.viewers[post] = viewers
}

// total returns the newest total the node was handed for post.
func (n *node) total(post string) (update.Watching, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w, ok := n.got[post]
	return w, ok
}

// kill stops the node's counter, as a crash would: it adds nothing from now on.
func (n *node) kill() {
	n.stop()
	<-n.done
}

// startNode runs a counter with the given local viewers until the test ends.
func startNode(t *testing.T, client redis.UniversalClient, cfg Config, viewers map[string]int) *node {
	t.Helper()
	n := &node{viewers: maps.Clone(viewers), got: map[string]update.Watching{}, done: make(chan struct{})}
	if cfg.Interval == 0 {
		cfg.Interval = testInterval
	}
	c, err := New(cfg, client, keys, n, n, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	n.counter = c
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	go func() { // exits when kill or the test's cleanup cancels ctx
		defer close(n.done)
		c.Run(ctx)
	}()
	t.Cleanup(n.kill)
	return n
}

// waitTotal waits until every node was handed want for post.
func waitTotal(t *testing.T, timeout time.Duration, post string, want int64, nodes ...*node) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		for _, n := range nodes {
			if w, seen := n.total(post); !seen || w.Watching != want {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for i, n := range nodes {
				w, _ := n.total(post)
				t.Logf("node %d: %+v", i, w)
			}
			t.Fatalf("post %s: nodes did not all show %d watching within %v", post, want, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitTicks waits until the counter handled at least n more intervals than it had.
func waitTicks(t *testing.T, c *Counter, n int64) {
	t.Helper()
	target := c.Stats().Ticks.Load() + n
	deadline := time.Now().Add(time.Duration(n+20) * testInterval)
	for c.Stats().Ticks.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("counter did not tick %d times", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package watching

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
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

func (n *node) ExistingViewers(fn func(string, int)) {
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
	poll.Check(t, timeout, func() error {
		var got []update.Watching
		ok := true
		for _, n := range nodes {
			w, seen := n.total(post)
			got = append(got, w)
			ok = ok && seen && w.Watching == want
		}
		if !ok {
			return fmt.Errorf("post %s: nodes did not all show %d watching: %+v", post, want, got)
		}
		return nil
	})
}

// waitTicks waits until the counter handled at least n more intervals than it had.
func waitTicks(t *testing.T, c *Counter, n int64) {
	t.Helper()
	target := c.Stats().Ticks.Load() + n
	poll.Until(t, time.Duration(n+20)*testInterval, fmt.Sprintf("the counter to tick %d times", n), func() bool {
		return c.Stats().Ticks.Load() >= target
	})
}

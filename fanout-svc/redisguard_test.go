package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/apicheck"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// testNode is a fanout-svc started by run() for a test, with an HTTP client of its own.
type testNode struct {
	base   string
	client *http.Client
}

// startNode runs fanout-svc against redisURL until the test ends; env adds settings.
func startNode(t *testing.T, redisURL string, env map[string]string) *testNode {
	t.Helper()
	addr := freeport.Addr(t)
	all := map[string]string{"LISTEN_ADDR": addr, "REDIS_URL": redisURL, "LOG_LEVEL": "error", "REDIS_TIMEOUT": "300ms"}
	for k, v := range env {
		all[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"fanout-svc"}, func(k string) string { return all[k] }, io.Discard) }()
	tr := &http.Transport{}
	apicheck.Serve(t, addr, apicheck.Fanout()) // every reply as its document says
	n := &testNode{base: "http://" + addr, client: &http.Client{Transport: apicheck.Wrap(tr)}}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("run returned %v; want nil", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("run did not return within 15s of cancel")
		}
		tr.CloseIdleConnections()
	})
	n.awaitStatus(t, "/readyz", http.StatusOK)
	return n
}

func (n *testNode) status(path string) int {
	resp, err := n.client.Get(n.base + path)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (n *testNode) awaitStatus(t *testing.T, path string, want int) {
	t.Helper()
	poll.Until(t, 10*time.Second, path+" answering "+strconv.Itoa(want), func() bool { return n.status(path) == want })
}

// metric reads one unlabelled sample from /metrics; -1 when absent.
func (n *testNode) metric(name string) float64 {
	resp, err := n.client.Get(n.base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// watcher is one SSE stream read in the background: the newest count, the retry hints, EOF.
type watcher struct {
	mu      sync.Mutex
	count   int64
	retries int
	eof     bool
	done    chan struct{}
}

// watch opens /sse/post and waits for its first count.
func (n *testNode) watch(t *testing.T, post string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := sseclient.URLRequest(n.base + "/sse/" + post)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sseclient.Dial(ctx, req)
	if err == nil {
		err = c.Head(ctx)
	}
	if err != nil {
		cancel()
		t.Fatalf("GET /sse/%s: %v; want 200", post, err)
	}
	w := &watcher{count: -1, done: make(chan struct{})}
	go func() { // exits when the stream ends or the test cancels it
		defer close(w.done)
		defer c.Close()
		_ = c.Run(ctx, func(e *sse.Event) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if e.Retry >= 0 {
				w.retries++
			}
			// A watching event's data parses as an update too (count 0), and it may follow a
			// count in the same write: only count events are counts.
			if string(e.Event) != sse.EventCount {
				return
			}
			if u, err := update.Parse(e.Data); err == nil {
				w.count = u.Count
			}
		})
		w.mu.Lock()
		w.eof = true
		w.mu.Unlock()
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	poll.Until(t, 5*time.Second, "the stream's first count", func() bool { c, _, _ := w.state(); return c >= 0 })
	return w
}

func (w *watcher) state() (count int64, retries int, eof bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count, w.retries, w.eof
}

// publish stores post's count and version and publishes the update, as the writer's script does:
// a node that resubscribes after the message went out finds the count when it re-reads. The
// post's first update also announces its creation (rediskeys.Created), which a node waiting on
// the post subscribes on.
func publish(t *testing.T, rs *redistest.Server, post string, count int64) {
	t.Helper()
	keys := rediskeys.New("likes:")
	u := update.Update{PostID: post, Count: count, TS: time.Now().UnixMicro()}
	existed, err := rs.Do("EXISTS", keys.Version(post))
	if err != nil {
		t.Fatal(err)
	}
	cmds := [][]any{
		{"SET", keys.Count(post), count},
		{"SET", keys.Version(post), u.TS},
		{"PUBLISH", keys.Channel(post), string(u.AppendJSON(nil))},
	}
	if existed == int64(0) {
		cmds = append(cmds, []any{"PUBLISH", keys.Created(), post})
	}
	for _, cmd := range cmds {
		if _, err := rs.Do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd[0], err)
		}
	}
}

// TestRedisLostPastGraceShedsViewers: a node that loses Redis fails readiness and refuses new
// streams at once; past REDIS_GRACE it closes its viewers with a retry hint while it keeps
// running; when Redis is back it is ready again and serves live updates.
func TestRedisLostPastGraceShedsViewers(t *testing.T) {
	rs := redistest.Start(t)
	n := startNode(t, rs.URL, map[string]string{"REDIS_GRACE": "1s", "DRAIN_WINDOW": "300ms"})
	var ws []*watcher
	for range 3 {
		ws = append(ws, n.watch(t, "g"))
	}
	lostAt := time.Now()
	rs.Kill()
	n.awaitStatus(t, "/readyz", http.StatusServiceUnavailable)
	n.awaitStatus(t, "/sse/g", http.StatusServiceUnavailable)
	for i, w := range ws {
		poll.Until(t, 10*time.Second, "a viewer to be shed", func() bool { _, _, eof := w.state(); return eof })
		if _, retries, _ := w.state(); retries < 2 { // the preamble's, then the shed's
			t.Errorf("viewer %d saw %d retry hints; want the shed's hint before the close", i, retries)
		}
	}
	if since := time.Since(lostAt); since < time.Second {
		t.Errorf("viewers shed %v after Redis went; want no sooner than REDIS_GRACE (1s)", since)
	}
	if got := n.metric("likes_fanout_redis_sheds_total"); got != 1 {
		t.Errorf("likes_fanout_redis_sheds_total = %v; want 1", got)
	}
	if got := n.metric("likes_fanout_redis_reachable"); got != 0 {
		t.Errorf("likes_fanout_redis_reachable = %v while Redis is down; want 0", got)
	}

	rs.Restart()
	n.awaitStatus(t, "/readyz", http.StatusOK)
	poll.Until(t, 5*time.Second, "the guard to see Redis back", func() bool { return n.metric("likes_fanout_redis_reachable") == 1 })
	w := n.watch(t, "g")
	publish(t, rs, "g", 9)
	poll.Until(t, 5*time.Second, "a new viewer to get count 9", func() bool { c, _, _ := w.state(); return c == 9 })
}

// TestRedisBackWithinGraceKeepsViewers: Redis back before the grace ran out: nobody is shed,
// the relay resubscribes by itself and the same streams carry the next update.
func TestRedisBackWithinGraceKeepsViewers(t *testing.T) {
	rs := redistest.Start(t)
	n := startNode(t, rs.URL, map[string]string{"REDIS_GRACE": "1m"})
	publish(t, rs, "r", 0) // the post exists, so the node holds a channel of it to resubscribe
	w := n.watch(t, "r")
	rs.Kill()
	n.awaitStatus(t, "/readyz", http.StatusServiceUnavailable)
	poll.Until(t, 5*time.Second, "the guard to see Redis gone", func() bool { return n.metric("likes_fanout_redis_reachable") == 0 })
	rs.Restart()
	n.awaitStatus(t, "/readyz", http.StatusOK)
	poll.Until(t, 10*time.Second, "the relay to resubscribe", func() bool { return n.metric("likes_fanout_resubscribes_total") >= 1 })
	publish(t, rs, "r", 4)
	poll.Until(t, 5*time.Second, "the kept viewer to get count 4", func() bool { c, _, _ := w.state(); return c == 4 })
	if _, _, eof := w.state(); eof {
		t.Errorf("the viewer's stream ended; want it kept")
	}
	if got := n.metric("likes_fanout_redis_sheds_total"); got != 0 {
		t.Errorf("likes_fanout_redis_sheds_total = %v; want 0 (Redis came back within the grace)", got)
	}
}

package stream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/fanout-svc/internal/relay"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// These tests run the stream handler as a node does: a real hub, a real relay and a real
// redis-server (or Redis Cluster), viewers over real HTTP on loopback.

var testKeys = rediskeys.New("test:")

type testNode struct {
	URL   string
	Hub   *hub.Hub
	Posts *posts.Registry
	Relay *relay.Relay
}

// startNode serves streams from a hub, a registry of posts and a relay on client until the test
// ends.
func startNode(t testing.TB, client redis.UniversalClient, cfg Config, pcfg posts.Config) *testNode {
	t.Helper()
	log := zap.NewNop()
	var sink hubSink // the relay hands updates to the hub, as the node does
	rel := relay.New(client, testKeys, &sink, log)
	reg := posts.New(pcfg, rel)
	h, err := hub.New(hub.Config{}, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	sink.h = h
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // exits when the cleanup cancels ctx
		defer close(done)
		rel.Run(ctx)
	}()
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 100_000
	}
	if cfg.Retry == 0 {
		cfg.Retry = time.Second
	}
	r := chi.NewRouter()
	New(cfg, h, reg, rel, log).Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(func() {
		h.Close()
		reg.Close()
		srv.Close()
		cancel()
		<-done
	})
	return &testNode{URL: srv.URL, Hub: h, Posts: reg, Relay: rel}
}

// hubSink hands the relay's updates to a hub built after the relay (relay.Sink).
type hubSink struct{ h *hub.Hub }

func (s *hubSink) Publish(u update.Update) { s.h.Publish(u) }

// watcher is one viewer's stream read with the shared SSE client.
type watcher struct {
	mu     sync.Mutex
	status int
	events []update.Update
	at     []time.Time // when each event was read
	done   chan struct{}
	stop   context.CancelFunc
}

// watch opens a stream of url until the test ends (or stop is called).
func watch(t testing.TB, url string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{done: make(chan struct{}), stop: cancel}
	go func() { // exits when stop cancels the request or the server ends the stream
		defer close(w.done)
		req, err := sseclient.URLRequest(url)
		if err != nil {
			return
		}
		c, err := sseclient.Dial(ctx, req)
		if err != nil {
			return
		}
		defer c.Close()
		err = c.Head(ctx)
		var se *sseclient.StatusError
		w.mu.Lock()
		switch {
		case err == nil:
			w.status = http.StatusOK
		case errors.As(err, &se):
			w.status = se.Code
		}
		w.mu.Unlock()
		if err != nil {
			return
		}
		_ = c.Run(ctx, func(e *sse.Event) {
			now := time.Now()
			w.mu.Lock()
			defer w.mu.Unlock()
			if u, perr := update.Parse(e.Data); perr == nil {
				w.events = append(w.events, u)
				w.at = append(w.at, now)
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// last returns the newest event of post and whether there is one.
func (w *watcher) last(post string) (update.Update, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.events) - 1; i >= 0; i-- {
		if w.events[i].PostID == post {
			return w.events[i], true
		}
	}
	return update.Update{}, false
}

func (w *watcher) has(post string, count int64) bool {
	u, ok := w.last(post)
	return ok && u.Count >= count
}

func (w *watcher) code() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// receivedAt returns when the event of post with count arrived.
func (w *watcher) receivedAt(post string, count int64) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, u := range w.events {
		if u.PostID == post && u.Count == count {
			return w.at[i], true
		}
	}
	return time.Time{}, false
}

// exist gives each post a version (0) if it has none, as a like would: the relay subscribes only
// to posts that exist, and these tests publish updates without the writer's script, which would
// announce a post's creation.
func exist(t testing.TB, client redis.UniversalClient, posts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range posts {
		if err := client.SetNX(ctx, testKeys.Version(p), 0, 0).Err(); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// publish sends an update the way the writer's script does (SPUBLISH on a cluster).
func publish(t testing.TB, client redis.UniversalClient, u update.Update) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	payload := string(u.AppendJSON(nil))
	var err error
	if _, ok := client.(*redis.ClusterClient); ok {
		err = client.SPublish(ctx, testKeys.Channel(u.PostID), payload).Err()
	} else {
		err = client.Publish(ctx, testKeys.Channel(u.PostID), payload).Err()
	}
	if err != nil {
		t.Fatalf("publish %+v: %v", u, err)
	}
}

// TestSubscriptionSurvivesFirstViewerLeaving: Redis is frozen (SIGSTOP), so the first viewer's
// subscription of a post waits for its confirmation for as long as the test needs, however slow
// the machine; 200 more viewers of the post arrive; the first one
// disconnects. The subscription is the node's, not the first viewer's: the 200 all get the
// snapshot and the updates after Redis answers.
func TestSubscriptionSurvivesFirstViewerLeaving(t *testing.T) {
	rs := redistest.Start(t)
	client := rs.Client(t)
	n := startNode(t, client, Config{SetupTimeout: 30 * time.Second}, posts.Config{UnsubscribeGrace: time.Minute})
	exist(t, client, "warm", "hot")
	warm := watch(t, n.URL+"/sse/warm") // opens the pub/sub and pool connections before the pause
	poll.Until(t, 20*time.Second, "the warm-up stream", func() bool { _, ok := warm.last("warm"); return ok })

	thaw := freeze(t, rs) // Redis answers nothing, so the subscription stays unconfirmed until thaw
	first := watch(t, n.URL+"/sse/hot")
	poll.Until(t, 20*time.Second, "the first viewer's subscription in flight", func() bool { return n.Posts.Subscriptions() == 2 })
	const others = 200
	viewers := make([]*watcher, others)
	for i := range viewers {
		viewers[i] = watch(t, n.URL+"/sse/hot")
	}
	poll.Until(t, 20*time.Second, "every viewer in setup", func() bool { return n.Hub.Admitted() == others+2 })
	first.stop()
	poll.Until(t, 20*time.Second, "the first viewer gone", func() bool { return n.Hub.Admitted() <= others+1 })
	thaw()
	for i, v := range viewers {
		poll.Until(t, 20*time.Second, "a snapshot at viewer "+strconv.Itoa(i), func() bool { _, ok := v.last("hot"); return ok || v.code() != 0 && v.code() != 200 })
		if v.code() != http.StatusOK {
			t.Fatalf("viewer %d got status %d after the first viewer left; want 200 and the stream", i, v.code())
		}
	}
	publish(t, client, update.Update{PostID: "hot", Count: 1, TS: 1})
	for i, v := range viewers {
		poll.Until(t, 20*time.Second, "the update at viewer "+strconv.Itoa(i), func() bool { return v.has("hot", 1) })
	}
}

// TestReturningViewerIsSubscribedAfterUnsubscribe: with a grace period of a millisecond, a
// viewer comes back to a post just as the node unsubscribes it, again and again. Every time the
// node ends up subscribed (the SUBSCRIBE went after the UNSUBSCRIBE) and the update arrives.
func TestReturningViewerIsSubscribedAfterUnsubscribe(t *testing.T) {
	rs := redistest.Start(t)
	client := rs.Client(t)
	n := startNode(t, client, Config{}, posts.Config{UnsubscribeGrace: time.Millisecond})
	exist(t, client, "flap")
	for i := int64(1); i <= 30; i++ {
		w := watch(t, n.URL+"/sse/flap")
		poll.Until(t, 20*time.Second, "the viewer's snapshot", func() bool { _, ok := w.last("flap"); return ok })
		publish(t, client, update.Update{PostID: "flap", Count: i, TS: i})
		poll.Until(t, 20*time.Second, "update "+strconv.FormatInt(i, 10), func() bool { return w.has("flap", i) })
		w.stop()
		poll.Until(t, 20*time.Second, "the viewer gone", func() bool { return n.Hub.Admitted() == 0 })
	}
	poll.Until(t, 20*time.Second, "the last unsubscribe", func() bool { return n.Posts.Subscriptions() == 0 })
	res, err := rs.Do("PUBSUB", "NUMSUB", testKeys.Channel("flap"))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := res.([]any); len(l) != 2 || l[1] != int64(0) {
		t.Errorf("PUBSUB NUMSUB after the last viewer left: %v; want 0 subscribers", res)
	}
}

// processID returns the pid of a redis-server, from INFO.
func processID(t testing.TB, s *redistest.Server) int {
	t.Helper()
	res, err := s.Do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := res.(string)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no process_id in INFO: %q", info)
	return 0
}

// freeze stops a redis-server with SIGSTOP (it holds its sockets and answers nothing) until the
// returned func or the end of the test resumes it.
func freeze(t testing.TB, s *redistest.Server) (thaw func()) {
	t.Helper()
	pid := processID(t, s)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	thaw = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(thaw)
	return thaw
}

// clusterPosts returns n new post ids per master of c (by the slot of the post's channel), each
// prefixed with prefix.
func clusterPosts(t testing.TB, c *redistest.Cluster, prefix string, n int) [][]string {
	t.Helper()
	out := make([][]string, len(c.Nodes))
	for i := 0; ; i++ {
		post := prefix + strconv.Itoa(i)
		node := c.Index(c.NodeFor(testKeys.Channel(post)))
		if len(out[node]) < n {
			out[node] = append(out[node], post)
		}
		full := true
		for _, ps := range out {
			full = full && len(ps) == n
		}
		if full {
			return out
		}
	}
}

// stoppedMasterCluster starts a 3-master cluster that keeps serving the healthy masters' slots
// while one master is down (cluster-require-full-coverage no; sharded pub/sub is served when
// the cluster is down by default).
func stoppedMasterCluster(t testing.TB) (*redistest.Cluster, *redis.ClusterClient) {
	c := redistest.StartCluster(t, 3, "--cluster-require-full-coverage", "no")
	return c, c.Client(t)
}

// TestClusterStoppedMasterLeavesOthersFlowing: one master of a 3-master cluster is stopped
// (SIGSTOP: its sockets stay open and nothing answers). On that master a viewer leaves (the
// node's SUNSUBSCRIBE goes to the stopped node) and a new one arrives (its subscription hangs);
// meanwhile updates of posts on the healthy masters keep reaching their viewers, and new viewers
// of posts on healthy masters connect.
func TestClusterStoppedMasterLeavesOthersFlowing(t *testing.T) {
	c, client := stoppedMasterCluster(t)
	n := startNode(t, client, Config{}, posts.Config{UnsubscribeGrace: 10 * time.Millisecond})
	posts := clusterPosts(t, c, "p", 3)
	fresh := clusterPosts(t, c, "new", 1)
	viewers := map[string]*watcher{}
	for _, ps := range posts {
		exist(t, client, ps...)
		for _, p := range ps {
			viewers[p] = watch(t, n.URL+"/sse/"+p)
		}
	}
	leaver := watch(t, n.URL+"/sse/"+posts[0][0])
	for p, w := range viewers {
		poll.Until(t, 20*time.Second, "the snapshot of "+p, func() bool { _, ok := w.last(p); return ok })
	}
	poll.Until(t, 20*time.Second, "the leaver's snapshot", func() bool { _, ok := leaver.last(posts[0][0]); return ok })

	freeze(t, c.Nodes[0])
	leaver.stop()
	hanging := watch(t, n.URL+"/sse/"+fresh[0][0]) // its subscription waits on the stopped node
	for round := int64(1); round <= 20; round++ {
		for node := 1; node < len(posts); node++ {
			for _, p := range posts[node] {
				publish(t, client, update.Update{PostID: p, Count: round, TS: round})
			}
		}
		for node := 1; node < len(posts); node++ {
			for _, p := range posts[node] {
				w := viewers[p]
				poll.Until(t, 20*time.Second, "round "+strconv.FormatInt(round, 10)+" at "+p, func() bool { return w.has(p, round) })
			}
		}
	}
	for node := 1; node < len(fresh); node++ {
		p := fresh[node][0]
		exist(t, client, p)
		w := watch(t, n.URL+"/sse/"+p)
		poll.Until(t, 20*time.Second, "a new viewer of "+p+" on a healthy master", func() bool { _, ok := w.last(p); return ok })
		publish(t, client, update.Update{PostID: p, Count: 1, TS: 1})
		poll.Until(t, 20*time.Second, "its update", func() bool { return w.has(p, 1) })
	}
	if _, ok := hanging.last(fresh[0][0]); ok {
		t.Errorf("a viewer of a post on the stopped master got a snapshot")
	}
}

// BenchmarkSubscribe measures how long a stream of 1 or 64 posts the node has no subscription
// for waits for its subscriptions (real redis-server on loopback).
func BenchmarkSubscribe(b *testing.B) {
	rs := redistest.Start(b)
	n := startNode(b, rs.Client(b), Config{}, posts.Config{UnsubscribeGrace: time.Millisecond})
	stream := 0
	for _, size := range []int{1, 64} {
		b.Run("posts="+strconv.Itoa(size), func(b *testing.B) {
			ids := make([]string, size)
			for b.Loop() {
				stream++
				for i := range ids {
					ids[i] = "s" + strconv.Itoa(stream) + "-" + strconv.Itoa(i)
				}
				held, err := n.Posts.Acquire(context.Background(), ids)
				if err != nil {
					b.Fatal(err)
				}
				n.Posts.Release(held)
			}
		})
	}
}

// BenchmarkClusterStoppedMaster measures the delivery latency (SPUBLISH to the viewer reading
// the event) of updates to posts on the healthy masters of a 3-master cluster, first with every
// master up, then with one master stopped (SIGSTOP) while its viewers come and go. b.N rounds
// each; every round updates 8 posts with 5 viewers each.
func BenchmarkClusterStoppedMaster(b *testing.B) {
	c, client := stoppedMasterCluster(b)
	n := startNode(b, client, Config{}, posts.Config{UnsubscribeGrace: 10 * time.Millisecond})
	posts := clusterPosts(b, c, "p", 4)
	var healthy []string
	for node := 1; node < len(posts); node++ {
		healthy = append(healthy, posts[node]...)
	}
	viewers := map[string][]*watcher{}
	for _, p := range healthy {
		for range 5 {
			w := watch(b, n.URL+"/sse/"+p)
			viewers[p] = append(viewers[p], w)
			poll.Until(b, 20*time.Second, "a snapshot", func() bool { _, ok := w.last(p); return ok })
		}
	}
	count := int64(0)
	measure := func(churn func()) []time.Duration {
		var lat []time.Duration
		for range b.N {
			count++
			sent := map[string]time.Time{}
			for _, p := range healthy {
				sent[p] = time.Now()
				publish(b, client, update.Update{PostID: p, Count: count, TS: count})
			}
			if churn != nil {
				churn()
			}
			for _, p := range healthy {
				for _, w := range viewers[p] {
					poll.Until(b, 20*time.Second, "a round", func() bool { return w.has(p, count) })
					at, _ := w.receivedAt(p, count)
					lat = append(lat, at.Sub(sent[p]))
				}
			}
		}
		return lat
	}
	b.ResetTimer()
	up := measure(nil)
	freeze(b, c.Nodes[0])
	stopped := 0
	var churn *watcher
	down := measure(func() { // a viewer of a new post on the stopped master each round
		stopped++
		if churn != nil {
			churn.stop() // the previous one gives up mid-subscribe
		}
		churn = watch(b, n.URL+"/sse/"+posts[0][stopped%len(posts[0])]+"x"+strconv.Itoa(stopped))
	})
	b.StopTimer()
	b.ReportMetric(quantile(up, 0.50).Seconds()*1e3, "p50-up-ms")
	b.ReportMetric(quantile(up, 0.99).Seconds()*1e3, "p99-up-ms")
	b.ReportMetric(quantile(down, 0.50).Seconds()*1e3, "p50-stopped-ms")
	b.ReportMetric(quantile(down, 0.99).Seconds()*1e3, "p99-stopped-ms")
	b.ReportMetric(0, "ns/op")
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

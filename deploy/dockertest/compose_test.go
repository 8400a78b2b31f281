package dockertest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
)

// crowd is the suite's viewers: opened through haproxy once the stack has four nodes, kept
// through the faults, and judged after each.
type crowd struct {
	owner   *testing.T // the whole test: the viewers outlive the step that opens them
	post    string
	viewers []*clienttest.Viewer
	nodes   func() string // what the nodes report, for failure messages
}

// open adds n viewers of the crowd's post, connected through haproxy's streams port.
func (c *crowd) open(url string, n int) {
	for range n {
		c.viewers = append(c.viewers, clienttest.Watch(c.owner, url+"/sse/"+c.post))
	}
}

// connects returns each viewer's successful connects so far.
func (c *crowd) connects() []int {
	out := make([]int, len(c.viewers))
	for i, v := range c.viewers {
		_, _, out[i] = v.Stats()
	}
	return out
}

// describe summarises the viewers' counts, for failure messages: count -> viewers showing it.
func (c *crowd) describe() string {
	seen := map[string]int{}
	var stale []string
	newest := int64(-1)
	for _, v := range c.viewers {
		if n, ok := v.Count(c.post); ok && n > newest {
			newest = n
		}
	}
	for i, v := range c.viewers {
		n, ok := v.Count(c.post)
		key := "none"
		if ok {
			key = strconv.FormatInt(n, 10)
		}
		seen[key]++
		if n != newest || !ok {
			events, backwards, connects := v.Stats()
			stale = append(stale, fmt.Sprintf("viewer %d: count %s, connected %v, connects %d, events %d, backwards %d", i, key, v.Connected(), connects, events, backwards))
		}
	}
	return fmt.Sprintf("%v; behind: %v", seen, stale)
}

// awaitCount waits until every viewer shows want and returns how long that took from since;
// it fails, saying what the viewers showed, if that is not within limit of since.
func (c *crowd) awaitCount(t *testing.T, want int64, since time.Time, limit time.Duration, what string) time.Duration {
	t.Helper()
	all := func() bool {
		for _, v := range c.viewers {
			if n, ok := v.Count(c.post); !ok || n != want {
				return false
			}
		}
		return true
	}
	for !all() {
		if time.Since(since) > limit {
			t.Fatalf("%s: viewers still not all on count %d %v after it; they show %s (count: viewers); nodes: %s",
				what, want, limit, c.describe(), c.nodes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(since)
	t.Logf("%s: all %d viewers on count %d %v after it", what, len(c.viewers), want, took.Round(10*time.Millisecond))
	return took
}

// figures collects what the suite measured, printed at the end for docs/RELIABILITY.md.
type figures []string

func (f *figures) add(t *testing.T, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	*f = append(*f, line)
	t.Log(line)
}

// TestComposeStack is a user's first hour with docker-compose.yml on a real engine, in steps
// that share one `up`. Each step asserts a figure; the first failing step ends the test (the
// later ones depend on the stack it leaves).
func TestComposeStack(t *testing.T) {
	needEngine(t)
	if _, err := docker(context.Background(), nil, "compose", "version"); err != nil {
		t.Fatalf("the docker CLI %s has no Compose v2 plugin: run `make images-offline` (it builds one when missing): %v", engine.docker, err)
	}
	s := newStack(t)
	parent := t
	var got figures
	defer func() {
		fmt.Fprintf(os.Stderr, "dockertest figures:\n  %s\n", strings.Join(got, "\n  "))
	}()
	c := &crowd{owner: t, post: fmt.Sprintf("dt%d", time.Now().Unix()), nodes: s.describeNodes}
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"1 up --build --wait", func(t *testing.T) { stepUp(t, s, &got) }},
		{"2 a like reaches a viewer and the page", func(t *testing.T) { stepLike(t, s) }},
		{"3 scale to 4 and ramp", func(t *testing.T) { stepScale(t, s, c, &got) }},
		{"4 kill a fanout node", func(t *testing.T) { stepKill(t, s, c, &got) }},
		{"5 redis outage and failover", func(t *testing.T) { stepRedis(t, s, c, &got) }},
		{"6 partitions", func(t *testing.T) { stepPartitions(t, s, c, &got) }},
		{"7 scale down to 2", func(t *testing.T) { stepScaleDown(t, s, c, &got) }},
		{"8 down and up", func(t *testing.T) { stepDownUp(t, s, c, &got) }},
	}
	for _, st := range steps {
		start := time.Now()
		ok := t.Run(st.name, func(t *testing.T) {
			// The stack's helpers fail the step that calls them, never the parent test from a
			// subtest's goroutine (which testing reports as FailNow on a parent).
			s.t = t
			defer func() { s.t = parent }()
			st.run(t)
		})
		got.add(t, "step %s: %v", st.name, time.Since(start).Round(100*time.Millisecond))
		if !ok {
			t.Fatalf("step %q failed; the later steps need the stack it leaves", st.name)
		}
	}
}

// stepUp: `docker compose up --build --wait` from a clean state brings every service healthy.
func stepUp(t *testing.T, s *stack, got *figures) {
	start := time.Now()
	s.mustCompose(25*time.Minute, "up", "--build", "--wait", "--wait-timeout", "300")
	got.add(t, "up --build --wait: every service healthy after %v", time.Since(start).Round(time.Second))
	want := map[string]int{"writer-svc": 2, "fanout-svc": 1, "haproxy": 1}
	for _, svc := range append(slices.Clone(dataNodes), sentinels...) {
		want[svc] = 1
	}
	for svc, n := range want {
		names := s.containers(svc, false)
		if len(names) != n {
			t.Errorf("%s: %d containers running %v; want %d", svc, len(names), names, n)
		}
		for _, name := range names {
			if st := s.inspect(name); !st.Running || st.Health != "healthy" {
				t.Errorf("%s: running=%v health=%q; want running and healthy", name, st.Running, st.Health)
			}
		}
	}
	if up := clienttest.HAProxyServersUp(s.stats, "writer-svc"); up != 2 {
		t.Errorf("haproxy reports %d writer servers UP; want 2", up)
	}
	if p := s.awaitTopology(t, 30*time.Second); p != dataNodes[0] {
		t.Errorf("the Sentinels name %s the primary; want %s, the initial primary", p, dataNodes[0])
	}
	got.add(t, "redis: %s the primary, the other data nodes its replicas in sync, all 3 Sentinels agreeing", dataNodes[0])
}

// stepLike: a like through haproxy's :8080 reaches an SSE viewer on :8090, and the live page
// served through haproxy shows likes in Chromium: one sent to the API, one clicked on the page.
func stepLike(t *testing.T, s *stack) {
	post := fmt.Sprintf("first%d", time.Now().UnixNano())
	v := clienttest.Watch(t, s.stream+"/sse/"+post)
	clienttest.WaitCount(t, 10*time.Second, post, 0, v)
	if got := s.like(post, "alice"); got != 1 {
		t.Fatalf("like answered count %d; want 1", got)
	}
	clienttest.WaitCount(t, 5*time.Second, post, 1, v)

	// The page shows PAGE_POSTS (1,2,3,4 by default); the stack is new, so every count is 0.
	browser := browsertest.Start(t)
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	defer stop()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.pages+"/")); err != nil {
		t.Fatalf("open the page through haproxy: %v", err)
	}
	waitPage(t, ctx, `document.getElementById("connection")?.dataset.state === "live"`, "the page to go live")
	waitPage(t, ctx, `document.querySelector('li[data-post="1"] .count-value')?.dataset.count === "0"`, "post 1 at 0")
	s.like("1", "bob")
	waitPage(t, ctx, `document.querySelector('li[data-post="1"] .count-value')?.dataset.count === "1"`, "the page to show bob's like of post 1")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`li[data-post="2"] .like`))); err != nil {
		t.Fatalf("click the like button of post 2: %v", err)
	}
	waitPage(t, ctx, `document.querySelector('li[data-post="2"] .count-value')?.dataset.count === "1"`, "the page to show its own like of post 2")
	// The page shows the like at once and sends it; the writers have it when the answer lands.
	waitPage(t, ctx, `document.querySelector('li[data-post="2"] .like')?.getAttribute("aria-busy") !== "true"`, "the page's like request to finish")
	var stored int64
	poll.Check(t, 10*time.Second, func() error {
		if stored = s.storedCount("2"); stored == 1 {
			return nil
		}
		return fmt.Errorf("the writers to store the page's like of post 2 (they store %d; the page posts through haproxy's likes port)", stored)
	})
}

// waitPage polls a JavaScript condition in the page, failing with what the page shows.
func waitPage(t *testing.T, ctx context.Context, expr, what string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main")?.innerText ?? document.body.innerText`))
		t.Fatalf("waiting for %s: %v; the page shows:\n%s", what, err, shown)
	}
}

// busiest returns the running node holding the most viewers.
func (s *stack) busiest(t *testing.T) (node, int) {
	t.Helper()
	var best node
	most := -1
	for _, n := range s.nodes() {
		if v := int(n.metric("likes_fanout_viewers")); v > most {
			best, most = n, v
		}
	}
	if most <= 0 {
		t.Fatalf("no node holds viewers: %v", s.viewersPerNode())
	}
	return best, most
}

// stepKill: `docker kill` of a node holding viewers: they reconnect through haproxy and show
// the right count within 5 s. The engine records docker kill as a manual stop and restarts
// nothing, so the scale command brings the node back; before it does, Prometheus must report
// LikesNodeDown firing, not just pending, for the node that stays dead. Then a crash (the node's process killed
// from outside, as the OOM killer would): the same within 5 s, and the engine restarts it
// (restart: unless-stopped).
func stepKill(t *testing.T, s *stack, c *crowd, got *figures) {
	// LikesNodeDown counts a job's replicas against the most it held for two minutes in the last
	// hour: Prometheus must know the four before one goes.
	s.awaitQuery(t, `job:likes_replicas_up:max1h{job="fanout-svc"} >= 4`, 3*time.Minute)
	victim, held := s.busiest(t)
	s.mustDocker("kill", victim.name)
	killed := time.Now()
	want := s.like(c.post, "after-kill")
	took := c.awaitCount(t, want, killed, 5*time.Second, "docker kill of "+victim.name)
	got.add(t, "docker kill of a node holding %d of 20 viewers: all 20 on the new count in %v (limit 5s)", held, took.Round(10*time.Millisecond))
	if st := s.inspect(victim.name); st.Running {
		t.Errorf("%s runs again after docker kill; the engine was expected to leave it stopped", victim.name)
	}
	// The killed node leaves Compose's DNS and so discovery: the alert names the job, one replica
	// short, and must still hold when its `for:` (two minutes) is up.
	a := s.awaitAlertFiring(t, "LikesNodeDown", 3*time.Minute, "job=fanout-svc")
	got.add(t, "prometheus: %v, pending %v after the kill, firing %v after it", a,
		a.ActiveAt.Sub(killed).Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond))
	start := time.Now()
	s.mustCompose(5*time.Minute, strings.Fields(fmt.Sprintf(scaleCommand, 4))...)
	s.awaitHealthy("fanout-svc", 4, time.Minute)
	s.awaitBackends(4, 30*time.Second)
	got.add(t, "the killed node started again by `docker compose %s` and UP in haproxy %v after the command", fmt.Sprintf(scaleCommand, 4), time.Since(start).Round(100*time.Millisecond))

	victim, held = s.busiest(t)
	before := s.inspect(victim.name).Restarts
	pid := s.mustDocker("inspect", "-f", "{{.State.Pid}}", victim.name)
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 1 {
		t.Fatalf("%s: process id %q", victim.name, pid)
	}
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d (%s's process): %v", n, victim.name, err)
	}
	crashed := time.Now()
	want = s.like(c.post, "after-crash")
	took = c.awaitCount(t, want, crashed, 5*time.Second, "crash of "+victim.name)
	poll.Check(t, 60*time.Second, func() error {
		if st := s.inspect(victim.name); st.Restarts > before && st.Running && st.Health == "healthy" {
			return nil
		}
		return fmt.Errorf("the engine to restart the crashed %s and its health check to pass (restarts were %d; now %+v)", victim.name, before, s.inspect(victim.name))
	})
	s.awaitBackends(4, 30*time.Second)
	got.add(t, "crash (kill -9 of the process) of a node holding %d viewers: all 20 on the new count in %v; the engine restarted it, UP in haproxy %v after the crash",
		held, took.Round(10*time.Millisecond), time.Since(crashed).Round(100*time.Millisecond))
}

// stepRedis: with the append-only file on every data node and a like flowing every 20 ms from
// fresh users (each retried until 200), three Redis faults.
//
// An outage: every data node killed at once (`docker kill`, which the engine does not undo),
// then `docker compose start`ed, as an operator would. Likes are refused meanwhile, and the
// writers' LikesWriterRedisErrors goes pending, raised by this outage: the alert that says Redis
// is down.
//
// A failover: the primary alone killed. The Sentinels promote a replica, and likes are
// acknowledged again within 10 s of the kill (the seconds without an acknowledgement and the
// attempts refused are recorded); the killed node, started again, comes back as a replica of
// the new primary.
//
// A cut: the new primary cut off the Redis network, still running. The same 10 s, and once it is
// connected again it comes back as a replica of the one promoted in its place.
//
// After all three: no acknowledged like is lost; no fanout node shed its viewers (every fault ends
// within the suite's REDIS_GRACE), none raises LikesViewersShed, and the viewers converge on the
// stored count without reconnecting.
func stepRedis(t *testing.T, s *stack, c *crowd, got *figures) {
	base := s.storedCount(c.post)
	connects := c.connects()
	sheds := s.sheds()
	primary := s.awaitTopology(t, 30*time.Second)
	flow := clienttest.StartSessionLikeFlow(t, s.likes, c.post, 20*time.Millisecond)
	flowing := func(what string) {
		sent := flow.Sent()
		poll.Until(t, 30*time.Second, "likes to flow "+what, func() bool { return flow.Sent() > sent+20 })
	}
	flowing("before the outage")

	// The outage: no data node left, so no failover can help.
	var nodes []string
	for _, n := range dataNodes {
		nodes = append(nodes, s.containers(n, false)...)
	}
	watch := watchAcks(flow)
	refused := flow.Failed()
	killed := time.Now()
	s.mustDocker(append([]string{"kill"}, nodes...)...)
	s.mustCompose(2*time.Minute, append([]string{"start"}, dataNodes...)...)
	for _, n := range dataNodes {
		s.awaitHealthy(n, 1, time.Minute)
	}
	flowing("after the outage")
	gap := watch.Stop()
	after := s.awaitTopology(t, 30*time.Second)
	got.add(t, "every data node killed, then compose start: no like acknowledged for %v, %d attempts refused; %s the primary before and %s after",
		gap.Round(100*time.Millisecond), flow.Failed()-refused, primary, after)
	a := s.awaitAlert(t, "LikesWriterRedisErrors", 20*time.Second)
	if a.ActiveAt.Before(killed.Add(-time.Second)) {
		t.Errorf("%v active since %s, before the outage began at %s: not raised by it", a, a.ActiveAt.Format("15:04:05.000"), killed.Format("15:04:05.000"))
	}
	got.add(t, "prometheus: %v, active %v after the kill", a, a.ActiveAt.Sub(killed).Round(100*time.Millisecond))

	// The failover.
	primary = after
	watch = watchAcks(flow)
	refused = flow.Failed()
	victim := s.containers(primary, false)[0]
	killed = time.Now()
	s.mustDocker("kill", victim)
	promoted := s.awaitPromoted(t, primary, 10*time.Second)
	took := time.Since(killed)
	flowing("after the failover")
	gap = watch.Stop()
	if gap > 10*time.Second {
		t.Errorf("no like acknowledged for %v around the kill of the primary %s; want likes acknowledged again within 10 s", gap, primary)
	}
	if gap < 500*time.Millisecond {
		t.Errorf("likes went on being acknowledged (longest gap %v) while the primary %s was killed: it did not hold them", gap, primary)
	}
	got.add(t, "docker kill of the primary %s: the Sentinels agreed on %s %v after the kill; no like acknowledged for %v (limit 10 s), %d attempts refused",
		primary, promoted, took.Round(100*time.Millisecond), gap.Round(100*time.Millisecond), flow.Failed()-refused)
	start := time.Now()
	s.mustCompose(2*time.Minute, "start", primary)
	s.awaitHealthy(primary, 1, time.Minute) // healthy: its replication link is up
	if p := s.awaitTopology(t, 30*time.Second); p != promoted {
		t.Errorf("the Sentinels name %s after %s came back; want %s, the promoted replica", p, primary, promoted)
	}
	got.add(t, "the killed %s started again: a replica of %s, in sync, %v after compose start", primary, promoted, time.Since(start).Round(100*time.Millisecond))

	// The cut: the primary off the Redis network (writers, replicas and Sentinels all lose it), still
	// running. It stops taking writes once its replicas are gone for min-replicas-max-lag, the
	// Sentinels promote a replica, and once it is connected again (at its pinned address: the
	// others find it through /etc/hosts) they make it that replica's replica.
	primary = promoted
	watch = watchAcks(flow)
	refused = flow.Failed()
	victim = s.containers(primary, false)[0]
	addr := s.ip(victim, "redis")
	if addr == "" {
		t.Fatalf("%s has no address on the Redis network", victim)
	}
	cut := time.Now()
	s.mustDocker("network", "disconnect", network("redis"), victim)
	promoted = s.awaitPromoted(t, primary, 10*time.Second)
	took = time.Since(cut)
	flowing("after the cut")
	gap = watch.Stop()
	if gap > cutAckBound {
		t.Errorf("no like acknowledged for %v around the cut of the primary %s; want likes acknowledged again within %v", gap, primary, cutAckBound)
	}
	got.add(t, "the primary %s cut off the network: the Sentinels agreed on %s %v after the cut; no like acknowledged for %v (limit %v), %d attempts refused",
		primary, promoted, took.Round(100*time.Millisecond), gap.Round(100*time.Millisecond), cutAckBound, flow.Failed()-refused)
	start = time.Now()
	s.mustDocker("network", "connect", "--ip", addr, network("redis"), victim)
	if p := s.awaitTopology(t, time.Minute); p != promoted {
		t.Errorf("the Sentinels name %s after %s came back; want %s, the promoted replica", p, primary, promoted)
	}
	got.add(t, "the cut-off %s connected again: a replica of %s, in sync, %v later", primary, promoted, time.Since(start).Round(100*time.Millisecond))
	flow.Stop()

	stored, sent := s.storedCount(c.post), flow.Sent()
	// Each user is retried until a 200, so the count is base + acknowledged likes, plus at most
	// the last user's like if it was stored but its answer lost when the flow stopped.
	if stored < base+sent || stored > base+sent+1 {
		t.Errorf("stored count %d; want %d (before) + %d (acknowledged) = %d: an acknowledged like was lost or counted twice",
			stored, base, sent, base+sent)
	}
	took = c.awaitCount(t, stored, time.Now(), 10*time.Second, "after the Redis faults")
	for i, n := range c.connects() {
		if n != connects[i] {
			t.Errorf("viewer %d reconnected (%d connects, %d before); want it kept through the Redis faults", i, n, connects[i])
		}
	}
	for name, n := range s.sheds() {
		if n != sheds[name] {
			t.Errorf("%s likes_fanout_redis_sheds_total %v, %v before the Redis faults; want no viewers shed (REDIS_GRACE %v)", name, n, sheds[name], redisGrace)
		}
	}
	s.noAlert(t, "LikesViewersShed")
	got.add(t, "redis outage, failover and cut: %d likes acknowledged, %d attempts refused, stored %d = %d + %d; viewers on it %v after the flow stopped, none reconnected, no node shed",
		sent, flow.Failed(), stored, base, sent, took.Round(10*time.Millisecond))
}

// stepPartitions cuts one node off the balancer's network, then another off Redis's (past the
// grace, and within it), and records how long its viewers stayed wrong.
func stepPartitions(t *testing.T, s *stack, c *crowd, got *figures) {
	t.Run("node cut off the network", func(t *testing.T) {
		victim, held := s.busiest(t)
		s.mustDocker("network", "disconnect", network("default"), victim.name)
		cut := time.Now()
		want := s.like(c.post, "net-cut")
		took := c.awaitCount(t, want, cut, 3*heartbeat, "network cut of "+victim.name)
		got.add(t, "node cut off the balancer's network holding %d of 20 viewers: all on the new count in %v (limit 3 heartbeats = %v; STREAM_IDLE_TIMEOUT %v)",
			held, took.Round(10*time.Millisecond), 3*heartbeat, 2*heartbeat)
		s.mustDocker("network", "connect", "--alias", "fanout-svc", network("default"), victim.name)
		s.awaitBackends(4, 30*time.Second)
		got.add(t, "network back: the node UP in haproxy %v after the cut", time.Since(cut).Round(100*time.Millisecond))
	})
	t.Run("node cut off Redis past the grace", func(t *testing.T) {
		victim, held := s.busiest(t)
		s.mustDocker("network", "disconnect", network("redis"), victim.name)
		cut := time.Now()
		want := s.like(c.post, "redis-cut")
		// The node notices the loss at its first failed probe (up to 1 s apart, each bounded by
		// REDIS_TIMEOUT, 2 s), waits the grace, closes its viewers over the drain window, and each
		// comes back after the retry: hint (SSE_RETRY 2 s, jittered up to 3 s): 24 s at worst here,
		// and 2 s for the engine and the snapshot. (A limit of 23 s passed at 22.2 and 22.8 s.)
		limit := redisGrace + drainWindow + 3*time.Second + 3*time.Second + 2*time.Second
		took := c.awaitCount(t, want, cut, limit, "Redis cut of "+victim.name)
		if n := victim.metric("likes_fanout_redis_sheds_total"); n != 1 {
			t.Errorf("%s likes_fanout_redis_sheds_total = %v; want 1", victim.name, n)
		}
		if n := victim.metric("likes_fanout_viewers"); n != 0 {
			t.Errorf("%s still holds %v viewers while cut off Redis; want 0 (moved to other nodes)", victim.name, n)
		}
		got.add(t, "node cut off Redis alone holding %d of 20 viewers: all on the new count in %v (REDIS_GRACE %v + DRAIN_WINDOW %v; limit %v)",
			held, took.Round(10*time.Millisecond), redisGrace, drainWindow, limit)
		for _, name := range []string{"LikesRedisUnreachable", "LikesViewersShed"} {
			a := s.awaitAlert(t, name, 15*time.Second, victim.instance())
			got.add(t, "prometheus: %v, active %v after the cut", a, a.ActiveAt.Sub(cut).Round(100*time.Millisecond))
		}
		s.mustDocker("network", "connect", "--alias", "fanout-svc", network("redis"), victim.name)
		back := time.Now()
		poll.Until(t, 30*time.Second, victim.name+" to reach Redis again", func() bool { return victim.metric("likes_fanout_redis_reachable") == 1 })
		s.awaitBackends(4, 30*time.Second)
		got.add(t, "Redis reachable again: the node ready and UP in haproxy %v after the network returned", time.Since(back).Round(100*time.Millisecond))
		// The node serves live updates again: a viewer on it directly sees the next like.
		direct := clienttest.Watch(t, victim.url+"/sse/"+c.post)
		clienttest.WaitCount(t, 10*time.Second, c.post, want, direct)
		next := s.like(c.post, "redis-back")
		clienttest.WaitCount(t, 5*time.Second, c.post, next, direct)
		c.awaitCount(t, next, time.Now(), 5*time.Second, "a like after the return")
		direct.Close()
	})
	t.Run("node cut off Redis within the grace", func(t *testing.T) {
		victim, held := s.busiest(t)
		connects := c.connects()
		s.mustDocker("network", "disconnect", network("redis"), victim.name)
		cut := time.Now()
		want := s.like(c.post, "short-cut")
		time.Sleep(redisGrace / 2) // a cut shorter than the grace: nobody is moved
		s.mustDocker("network", "connect", "--alias", "fanout-svc", network("redis"), victim.name)
		back := time.Now()
		took := c.awaitCount(t, want, back, 20*time.Second, "a Redis cut shorter than the grace")
		var moved int
		for i, n := range c.connects() {
			moved += n - connects[i]
		}
		if moved != 0 {
			t.Errorf("%d viewers reconnected during a %v Redis cut; want none (REDIS_GRACE %v)", moved, back.Sub(cut).Round(time.Second), redisGrace)
		}
		got.add(t, "node cut off Redis for %v (< REDIS_GRACE) holding %d viewers: none moved; resubscribed and resynced, all on the count %v after the network returned",
			back.Sub(cut).Round(100*time.Millisecond), held, took.Round(10*time.Millisecond))
	})
}

// cutAckBound bounds the gap in acknowledgements around the cut of the primary, which is longer than
// a kill's (10 s): over a network that drops packets rather than refusing them, the Sentinels
// agree 3.6-4.9 s after the cut (against 3.6 s after a kill), the writers' requests then in flight
// to the cut-off primary wait out REQUEST_TIMEOUT (2 s), and with REDIS_ACK_REPLICAS=all a batch
// waits for the old primary, listed as the new one's replica, until a majority calls it down
// (SENTINEL_DOWN_AFTER_MS and a 0.5 s poll): 8.5 to 11 s with down-after at 1 s. Fresh-clone CI
// runs measured it under and over 10 s (10.9 s on 2026-12-06), which the kill's bound would fail
// about one run in two. down-after went from 1 s to 1.5 s (docker-compose.yml says why), which
// it counts twice, in the agreement and in the wait for the old primary: 1 s more, 13 s.
const cutAckBound = 13 * time.Second

// stepScaleDown: `up --scale fanout-svc=2` stops two nodes, which drain their viewers over
// DRAIN_WINDOW; haproxy moves them, every viewer ends on the right count and no like is refused.
func stepScaleDown(t *testing.T, s *stack, c *crowd, got *figures) {
	before := s.viewersPerNode()
	flow := clienttest.StartSessionLikeFlow(t, s.likes, c.post, 50*time.Millisecond)
	sent := flow.Sent()
	poll.Until(t, 10*time.Second, "likes to flow", func() bool { return flow.Sent() > sent+10 })
	base := s.storedCount(c.post) - flow.Sent()
	start := time.Now()
	s.mustCompose(5*time.Minute, "up", "-d", "--wait", "--scale", "fanout-svc=2")
	stopped := time.Since(start)
	if n := len(s.nodes()); n != 2 {
		t.Fatalf("%d fanout nodes run after scaling to 2", n)
	}
	s.awaitBackends(2, 30*time.Second)
	flow.Stop()
	stored := s.storedCount(c.post)
	took := c.awaitCount(t, stored, start, stopped+10*time.Second, "scale down to 2")
	if f := flow.Failed(); f != 0 {
		t.Errorf("%d likes refused while two nodes drained; want 0 (the writers are untouched)", f)
	}
	if want := base + flow.Sent(); stored != want {
		t.Errorf("stored %d; want %d + %d acknowledged = %d", stored, base, flow.Sent(), want)
	}
	after := s.viewersPerNode()
	total := 0
	for _, n := range after {
		total += n
	}
	if total < len(c.viewers) {
		t.Errorf("the 2 nodes hold %d viewers %v; want all %d of the suite's", total, after, len(c.viewers))
	}
	got.add(t, "scale 4 -> 2 (viewers %v -> %v): compose returned after %v, all 20 on the final count %v after the command, %d likes flowed, 0 refused",
		before, after, stopped.Round(100*time.Millisecond), took.Round(10*time.Millisecond), flow.Sent())
}

// stepDownUp: `docker compose down` then `up`: the counts survive in the AOF volumes; `down -v`
// removes everything of the project.
func stepDownUp(t *testing.T, s *stack, c *crowd, got *figures) {
	for _, v := range c.viewers {
		v.Close()
	}
	posts := []string{c.post, "1", "2"}
	want := map[string]int64{}
	for _, p := range posts {
		want[p] = s.storedCount(p)
	}
	start := time.Now()
	s.mustCompose(5*time.Minute, "down")
	if left := s.containers("", true); len(left) != 0 {
		t.Fatalf("containers left after down: %v", left)
	}
	s.mustCompose(10*time.Minute, "up", "-d", "--wait")
	// New Sentinels, started after the data nodes: redis-0 is the primary again, whichever was
	// before (every node has every count: nothing was written while they stopped).
	primary := s.awaitTopology(t, 30*time.Second)
	for _, p := range posts {
		if n := s.storedCount(p); n != want[p] {
			t.Errorf("post %s: count %d after down and up; want %d (kept in the AOF volume)", p, n, want[p])
		}
	}
	got.add(t, "down + up: counts %v kept in the volumes; up again in %v, %s the primary", want, time.Since(start).Round(100*time.Millisecond), primary)

	s.mustCompose(5*time.Minute, "down", "-v")
	for _, kind := range []string{"container", "volume", "network"} {
		args := []string{kind, "ls", "-q", "--filter", "label=com.docker.compose.project=" + project}
		if kind == "container" {
			args = []string{"ps", "-aq", "--filter", "label=com.docker.compose.project=" + project}
		}
		if out := s.mustDocker(args...); out != "" {
			t.Errorf("down -v left %ss of the project: %s", kind, out)
		}
	}
	resp, err := http.Get(s.likes + "/count/1")
	if err == nil {
		resp.Body.Close()
		t.Errorf("haproxy's likes port still answers after down -v")
	}
}

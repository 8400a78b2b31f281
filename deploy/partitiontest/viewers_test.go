package partitiontest

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/likehistory"
	"github.com/likes/likes/testkit/netnstest"
	"github.com/likes/likes/testkit/poll"
)

const (
	// deliveryBound is how long a count may take from its change (the change's effect on the
	// primary) to a viewer: each count a viewer is shown must have been the post's count at some
	// moment of the deliveryBound before it arrived (likehistory.ShownOp). A change reaches a
	// viewer in milliseconds on a healthy cluster (a script, a WAIT for the replicas, a PUBLISH, a
	// node's write); 2 s allows the writer's request timeout (writerTimeout, the longest a change
	// waits for its replicas before it is published or given up) and a loaded machine's
	// scheduling, and still fails a viewer that shows a count the post had long ago, or never had.
	deliveryBound = 2 * time.Second
	// catchUpBound is how long after the final read (the cluster settled after the heal, the
	// clients stopped) every viewer has to show the stored count: a node that missed changes while
	// Redis was away or failed over re-reads its posts when it reconnects (package relay), and the
	// resumed viewer reconnects after the node's SSE_RETRY (fanoutRetry, jittered up to +50%).
	catchUpBound = 5 * time.Second
	// fanoutRetry is the nodes' SSE_RETRY: the delay a viewer waits before it reconnects, shorter
	// than the 2 s default so that the resumed viewer is back within the fault's hold.
	fanoutRetry = 500 * time.Millisecond
	// viewerClient is the first history client number of the viewers: the writer's clients are
	// 0-9.
	viewerClient = 100
)

// startFanouts starts two fanout-svc nodes, each in a host of its own, finding the primary
// through the Sentinels (sentinels) as the writer does, and waits until both accept connections.
// Every viewer of the test connects from the test process's one address, so the per-address cap
// is off (MAX_VIEWERS_PER_IP=0, as the e2e suite's nodes have it).
func (c *cluster) startFanouts(binDir string, sentinels []string) {
	c.t.Helper()
	bin, err := build(binDir, "fanout-svc")
	if err != nil {
		c.t.Fatal(err)
	}
	for i := range c.fanouts {
		h := c.net.Host(fmt.Sprintf("fanout-%d", i))
		c.fanouts[i] = h
		c.start(h, filepath.Join(c.dir, h.Name), []string{
			"REDIS_SENTINEL_ADDRS=" + strings.Join(sentinels, ","), "REDIS_SENTINEL_MASTER=" + master,
			"LISTEN_ADDR=" + h.HostPort(8090), "MAX_VIEWERS_PER_IP=0", "SSE_RETRY=" + fanoutRetry.String(),
		}, bin)
	}
	poll.Check(c.t, 20*time.Second, func() error {
		for _, h := range c.fanouts {
			conn, err := net.DialTimeout("tcp", h.HostPort(8090), time.Second)
			if err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
			_ = conn.Close()
		}
		return nil
	})
}

// viewer watches one post on one node (GET /sse/{post}) as a browser's EventSource does: it
// reconnects after the node's retry delay with the Last-Event-ID it last saw, and records every
// count event it was shown, with its arrival on the history's clock.
type viewer struct {
	node   *netnstest.Host
	post   string
	client int
	rec    *likehistory.Recorder

	mu       sync.Mutex
	shown    []likehistory.Shown
	ts       []int64         // each shown count's version: the Redis clock of its change, in microseconds
	epoch    []int64         // each shown count's primary epoch (update.Update.Epoch)
	lag      []time.Duration // each shown count's arrival after its version, but a connection's first
	fresh    bool            // the next count is a connection's first (the node's snapshot, not a change)
	resumes  []string        // the Last-Event-ID of every reconnect
	connects int
	lastID   string
	retry    time.Duration

	cancel context.CancelFunc
	done   chan struct{}
}

// watch starts a viewer of post on node; stop (or the test's end) ends it.
func watch(t *testing.T, rec *likehistory.Recorder, node *netnstest.Host, post string, client int) *viewer {
	ctx, cancel := context.WithCancel(context.Background())
	v := &viewer{node: node, post: post, client: client, rec: rec, retry: fanoutRetry, cancel: cancel, done: make(chan struct{})}
	go v.loop(ctx) // exits when stop cancels ctx
	t.Cleanup(v.stop)
	return v
}

func (v *viewer) stop() {
	v.cancel()
	<-v.done
}

func (v *viewer) loop(ctx context.Context) {
	defer close(v.done)
	for ctx.Err() == nil {
		v.session(ctx)
		v.mu.Lock()
		wait := max(v.retry, 100*time.Millisecond) // a node's retry: 0 would spin on a node that is down
		v.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// session is one connection: dialled with a second's deadline, read until the node closes it
// (its process killed, its drain) or the viewer stops.
func (v *viewer) session(ctx context.Context) {
	v.mu.Lock()
	req := sseclient.Request{Addr: v.node.HostPort(8090), Path: "/sse/" + v.post, LastEventID: v.lastID}
	v.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	conn, err := sseclient.Dial(dctx, req)
	cancel()
	if err != nil {
		return
	}
	defer conn.Close()
	if conn.Head(ctx) != nil {
		return
	}
	v.mu.Lock()
	v.connects++
	v.fresh = true
	if v.connects > 1 {
		v.resumes = append(v.resumes, req.LastEventID)
	}
	v.mu.Unlock()
	_ = conn.Run(ctx, v.handle)
}

func (v *viewer) handle(e *sse.Event) {
	now := v.rec.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.Retry >= 0 {
		v.retry = time.Duration(e.Retry) * time.Millisecond
	}
	if e.HasID {
		v.lastID = string(e.ID)
	}
	if string(e.Event) != sse.EventCount {
		return
	}
	u, err := update.Parse(e.Data)
	if err != nil || u.PostID != v.post {
		return
	}
	v.shown = append(v.shown, likehistory.Shown{Client: v.client, Post: u.PostID, Count: u.Count, Recv: now})
	v.ts = append(v.ts, u.TS)
	v.epoch = append(v.epoch, u.Epoch)
	if n := len(v.ts); !v.fresh && n > 1 && v.epoch[n-2] == u.Epoch && v.ts[n-2] < u.TS {
		// The Redis servers run on this machine's clock: the arrival less the version is the
		// change's way from the script to the viewer. A connection's first count is the node's
		// snapshot, and a count of a new epoch the new primary's state re-read after a failover:
		// neither is a change on its way.
		v.lag = append(v.lag, time.Since(time.UnixMicro(u.TS)))
	}
	v.fresh = false
}

// last is the newest count the viewer was shown and when, ok false before any.
func (v *viewer) last() (s likehistory.Shown, ts int64, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.shown) == 0 {
		return s, 0, false
	}
	return v.shown[len(v.shown)-1], v.ts[len(v.ts)-1], true
}

func (v *viewer) name() string { return v.node.Name + "/" + v.post }

// watchers starts, for each post, one viewer on each fanout node, and waits until each holds a
// stream; the viewers of the last node are the ones the round resumes through their node's
// restart.
func (c *cluster) watchers(t *testing.T, rec *likehistory.Recorder, posts []string) []*viewer {
	t.Helper()
	var vs []*viewer
	for _, post := range posts {
		for _, node := range c.fanouts {
			vs = append(vs, watch(t, rec, node, post, viewerClient+len(vs)))
		}
	}
	poll.Check(t, 10*time.Second, func() error {
		for _, v := range vs {
			v.mu.Lock()
			n := v.connects
			v.mu.Unlock()
			if n == 0 {
				return fmt.Errorf("%s has no stream yet", v.name())
			}
		}
		return nil
	})
	return vs
}

// restartFanout kills the last fanout node (SIGKILL: its viewers see their connections reset)
// and, after half the hold, starts it again; its viewers reconnect with their Last-Event-ID. It
// runs beside the round's fault, so that the node comes back into the fault (a primary cut off or
// not yet promoted) and has to find the primary through the Sentinels as it is then.
func (c *cluster) restartFanout() {
	node := c.fanouts[len(c.fanouts)-1]
	c.crash(node)
	down := time.NewTimer(hold / 2)
	<-down.C
	c.restart(node)
}

// viewerFigures is what the round's viewers showed, for its log line and its checks.
type viewerFigures struct {
	events, resumed int
	// maxLag is the longest a change took from the script to a viewer (Redis's clock against
	// ours: one machine), the snapshots of a connection's start and of a failover left out.
	maxLag time.Duration
	// caughtUp is when the last viewer to do so came to show the stored count for good, from the
	// final read: negative when all showed it before.
	caughtUp  time.Duration
	explained string // "yes", or why not
}

// checkViewers checks the round's viewers against its history ops (the final reads included):
// (a) every count shown is explained by a linearizable order of the changes, each shown count a
// read within deliveryBound of its arrival; (b) every viewer shows the post's final count within
// catchUpBound of the final read; (c) that count is its last event: no viewer is left on another.
// It stops the viewers, and fails the test for each check that does not hold.
//
// clientsOK is the clients' history's own verdict (ops without the viewers): when it fails, the
// viewers' counts add nothing to it and are not checked.
func checkViewers(t *testing.T, vs []*viewer, ops []likehistory.Op, clientsOK bool) viewerFigures {
	t.Helper()
	f := viewerFigures{caughtUp: -time.Hour}
	final, finalAt := map[string]int64{}, int64(0)
	for _, op := range ops {
		if op.Client == 9 && op.Kind == likehistory.Count && op.Outcome == likehistory.OK {
			final[op.Post], finalAt = op.Count, max(finalAt, op.End)
		}
	}
	// (b): the viewers catch up with the stored count.
	err := poll.For(catchUpBound, func() error {
		for _, v := range vs {
			want, ok := final[v.post]
			if !ok {
				return fmt.Errorf("post %s: no final count was read", v.post)
			}
			if s, ts, ok := v.last(); !ok || s.Count != want {
				return fmt.Errorf("%s shows %d (ts %d, %s after the final read; shown any: %v); the post's count is %d",
					v.name(), s.Count, ts, time.Duration(s.Recv-finalAt), ok, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("viewers not at the stored count %v after the final read: %v", catchUpBound, err)
	}
	for _, v := range vs {
		v.stop()
	}
	var shown []likehistory.Op
	for _, v := range vs {
		v.mu.Lock()
		f.events += len(v.shown)
		for _, s := range v.shown {
			shown = append(shown, likehistory.ShownOp(s, deliveryBound))
		}
		for _, l := range v.lag {
			f.maxLag = max(f.maxLag, l)
		}
		if n := len(v.shown); n > 0 && v.shown[n-1].Count == final[v.post] {
			f.caughtUp = max(f.caughtUp, time.Duration(catchUpAt(v.shown)-finalAt))
		}
		v.mu.Unlock()
	}
	for _, v := range vs {
		if v.node != vs[len(vs)-1].node {
			continue // only the last node restarts
		}
		v.mu.Lock()
		f.resumed += len(v.resumes)
		if !slices.ContainsFunc(v.resumes, func(id string) bool { return id != "" }) {
			t.Errorf("%s did not resume with a Last-Event-ID through its node's restart: %d connects, ids %q",
				v.name(), v.connects, v.resumes)
		}
		v.mu.Unlock()
	}
	// (c): nothing came after the final count that moved a viewer off it (the viewers stopped).
	for _, v := range vs {
		if s, ts, ok := v.last(); ok && s.Count != final[v.post] {
			t.Errorf("%s is stuck at %d (ts %d); the post's count is %d", v.name(), s.Count, ts, final[v.post])
		}
	}
	// (a): a history without the viewers that fails says nothing of them: the round reports it.
	if !clientsOK {
		f.explained = "not checked (the clients' history fails)"
		return f
	}
	if res := likehistory.Check(append(slices.Clone(ops), shown...), time.Minute); res.OK {
		f.explained = "yes"
		return f
	}
	f.explained = "**no**: " + firstUnexplained(ops, shown, vs)
	t.Errorf("the viewers were shown counts no linearizable order of the changes explains within %v of their arrival: %s",
		deliveryBound, f.explained)
	return f
}

// catchUpAt is when a viewer came to show its last count: the arrival of the first of the events
// that end its record with that count.
func catchUpAt(shown []likehistory.Shown) int64 {
	i := len(shown) - 1
	for i > 0 && shown[i-1].Count == shown[i].Count {
		i--
	}
	return shown[i].Recv
}

// firstUnexplained names the earliest shown count (by arrival) that the clients' history cannot
// explain with the counts shown before it: adding operations to a history that fails the check
// never makes it pass, so a binary search over the arrivals finds it.
func firstUnexplained(ops, shown []likehistory.Op, vs []*viewer) string {
	slices.SortFunc(shown, func(a, b likehistory.Op) int { return int(a.End - b.End) })
	bad := func(n int) bool {
		return !likehistory.Check(append(slices.Clone(ops), shown[:n]...), time.Minute).OK
	}
	lo, hi := 0, len(shown) // bad(hi); find the least n with bad(n)
	for lo < hi {
		mid := (lo + hi) / 2
		if bad(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == 0 {
		return "the search found none (the check ran out of time?)"
	}
	s := shown[lo-1]
	who := strconv.Itoa(s.Client)
	for _, v := range vs {
		if v.client == s.Client {
			who = v.name()
		}
	}
	return fmt.Sprintf("%s was shown count %d at %.2fs (changes of %s answered around then: %s)",
		who, s.Count, time.Duration(s.End).Seconds(), s.Post, around(ops, s))
}

// around lists the last few of post's changes called before s arrived and not answered
// deliveryBound before it: what the count shown could have come from.
func around(ops []likehistory.Op, s likehistory.Op) string {
	var out []string
	for _, op := range ops {
		if op.Post != s.Post || (op.Kind != likehistory.Like && op.Kind != likehistory.Unlike) ||
			op.End < s.Call || op.Call > s.End {
			continue
		}
		c := ""
		if op.Outcome == likehistory.OK {
			c = fmt.Sprintf(" count=%d", op.Count)
		}
		out = append(out, fmt.Sprintf("%s %s %s%s [%.2f-%.2fs]", op.Kind, op.User, op.Outcome, c,
			time.Duration(op.Call).Seconds(), time.Duration(op.End).Seconds()))
	}
	return strings.Join(out[max(0, len(out)-6):], "; ")
}

// dumpRound writes the round's operations and the viewers' counts in the order they ended or
// arrived, one a line, to .run/round-<prefix>.txt (kept for CI's artefacts, beside the
// visualised history), and returns the path: what a failed viewers' check is read against.
func dumpRound(prefix string, ops []likehistory.Op, vs []*viewer) (string, error) {
	type line struct {
		at   int64
		text string
	}
	var lines []line
	for _, op := range ops {
		s := fmt.Sprintf("%8.3f client %d %s %s %s %s", time.Duration(op.End).Seconds(), op.Client, op.Kind, op.Post, op.User, op.Outcome)
		if op.Outcome == likehistory.OK && op.Kind != likehistory.Likers {
			s += fmt.Sprintf(" count=%d", op.Count)
		}
		lines = append(lines, line{op.End, fmt.Sprintf("%s (called %.3f)", s, time.Duration(op.Call).Seconds())})
	}
	for _, v := range vs {
		v.mu.Lock()
		for i, s := range v.shown {
			lines = append(lines, line{s.Recv, fmt.Sprintf("%8.3f viewer %s shown count=%d ts=%d epoch=%d", time.Duration(s.Recv).Seconds(), v.name(), s.Count, v.ts[i], v.epoch[i])})
		}
		v.mu.Unlock()
	}
	slices.SortStableFunc(lines, func(a, b line) int { return cmp.Compare(a.at, b.at) })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	path := filepath.Join("..", "..", ".run", "round-"+prefix+".txt")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

package hub

import (
	"fmt"
	"net"
	"strconv"

	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

func TestViewerGetsSnapshotThenUpdatesInOrder(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	_, c := addViewer(t, h, false, "42")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "snapshot", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 1 })
	for n := int64(1); n <= 30; n++ { // a burst within MaxBatchFrames: batched, not conflated
		h.Publish(upd("42", n))
	}
	for n := int64(31); n <= 100; n++ {
		h.Publish(upd("42", n))
		poll.Until(t, 10*time.Second, "each paced update", func() bool { u, _ := r.last("42"); return u.Count == n })
	}
	events, ids, _, _ := r.snapshot()
	for i := 1; i < len(events); i++ {
		if events[i].TS <= events[i-1].TS {
			t.Fatalf("event %d went backwards: %+v after %+v", i, events[i], events[i-1])
		}
	}
	if got, want := ids[len(ids)-1], strconv.FormatInt(upd("42", 100).TS, 10); got != want {
		t.Errorf("single-post id = %q; want the version %q", got, want)
	}
	if len(events) != 101 {
		t.Errorf("got %d events; want 101 (snapshot + every update)", len(events))
	}
}

func TestOlderUpdatesAreDropped(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	_, c := addViewer(t, h, false, "p")
	r := startReader(t, c)
	h.Publish(upd("p", 5))
	h.Publish(upd("p", 3)) // delayed message: must never reach the viewer
	h.Publish(upd("p", 6))
	poll.Until(t, 10*time.Second, "count 6", func() bool { u, _ := r.last("p"); return u.Count == 6 })
	events, _, _, _ := r.snapshot()
	for _, e := range events {
		if e.Count == 3 {
			t.Fatalf("viewer received an older update: %+v", events)
		}
	}
	if got := h.Stats().Stale.Load(); got != 1 {
		t.Errorf("stale = %d; want 1", got)
	}
}

func TestMultiPostStreamUsesVersionIDs(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	_, c := addViewer(t, h, true, "a", "b")
	r := startReader(t, c)
	h.Publish(upd("a", 1))
	h.Publish(upd("b", 7))
	poll.Until(t, 10*time.Second, "both posts", func() bool {
		a, _ := r.last("a")
		b, _ := r.last("b")
		return a.Count == 1 && b.Count == 7
	})
	_, ids, _, _ := r.snapshot()
	if got := ids[len(ids)-1]; got != fmt.Sprint(upd("b", 7).TS) && got != fmt.Sprint(upd("a", 1).TS) {
		t.Errorf("multi-post id = %q; want a version", got)
	}
}

func TestSnapshotNewerThanHubWins(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	held, err := h.posts.Acquire(t.Context(), []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	h.Reserve(0)
	h.Publish(upd("s", 2))
	server, client := tcpPair(t)
	r := startReader(t, client)
	_ = h.Add(Viewer{Conn: server, Posts: held, Snapshot: []update.Update{upd("s", 4)}, Preamble: []byte(testPreamble)})
	poll.Until(t, 10*time.Second, "snapshot 4", func() bool { u, _ := r.last("s"); return u.Count == 4 })
	h.Publish(upd("s", 3)) // older than the snapshot: dropped for this viewer
	h.Publish(upd("s", 5))
	poll.Until(t, 10*time.Second, "count 5", func() bool { u, _ := r.last("s"); return u.Count == 5 })
	events, _, _, _ := r.snapshot()
	if len(events) != 2 {
		t.Errorf("got %+v; want the snapshot (4) then 5", events)
	}
}

func TestResumeSkipsKnownState(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	held, _ := h.posts.Acquire(t.Context(), []string{"r"})
	h.Reserve(0)
	server, client := tcpPair(t)
	r := startReader(t, client)
	_ = client.(*net.TCPConn).SetReadBuffer(1 << 16)
	_ = h.Add(Viewer{Conn: server, Posts: held, Snapshot: []update.Update{upd("r", 9)}, Preamble: []byte(testPreamble),
		Resume: func(_ int, u update.Update) bool { return u.Count != 9 }})
	h.Publish(upd("r", 10))
	poll.Until(t, 10*time.Second, "count 10", func() bool { u, _ := r.last("r"); return u.Count == 10 })
	events, _, _, _ := r.snapshot()
	if len(events) != 1 {
		t.Errorf("got %+v; want only 10 (9 was already known)", events)
	}
}

func TestDisconnectReleasesSubscription(t *testing.T) {
	h, sub := newTestHub(t, Config{})
	_, c := addViewer(t, h, false, "gone")
	poll.Until(t, 10*time.Second, "viewer counted", func() bool { return h.Stats().Viewers.Load() == 1 })
	c.Close()
	poll.Until(t, 10*time.Second, "viewer removed", func() bool { return h.Stats().Viewers.Load() == 0 })
	poll.Until(t, 10*time.Second, "unsubscribe after grace", func() bool { _, u := sub.counts("gone"); return u == 1 })
	if s, _ := sub.counts("gone"); s != 1 {
		t.Errorf("subscribed %d times; want 1", s)
	}
	if n := h.posts.Subscriptions(); n != 0 {
		t.Errorf("%d subscriptions; want none", n)
	}
}

func TestReacquireWithinGraceKeepsSubscription(t *testing.T) {
	sub := newRecordingSubscriber()
	h := startHub(t, Config{}, posts.Config{UnsubscribeGrace: time.Hour}, sub)
	_, c := addViewer(t, h, false, "flap")
	c.Close()
	poll.Until(t, 10*time.Second, "viewer removed", func() bool { return h.Stats().Viewers.Load() == 0 })
	_, c2 := addViewer(t, h, false, "flap")
	r := startReader(t, c2)
	h.Publish(upd("flap", 1))
	poll.Until(t, 10*time.Second, "update", func() bool { u, _ := r.last("flap"); return u.Count == 1 })
	if s, u := sub.counts("flap"); s != 1 || u != 0 {
		t.Errorf("subscribe/unsubscribe = %d/%d; want 1/0 (a refresh must not flap)", s, u)
	}
}

func TestHeartbeat(t *testing.T) {
	h, _ := newTestHub(t, Config{Heartbeat: 40 * time.Millisecond})
	_, c := addViewer(t, h, false, "hb")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "two pings", func() bool { _, _, p, _ := r.snapshot(); return p >= 2 })
}

// TestNoPingForAViewerThatGotAFrame: a heartbeat is for a stream that has been silent for the
// interval. A viewer whose post updates more often than that gets no ping (at 100,000 viewers
// and 15 s, pings to everyone would be 6,700 writes a second), while one on a quiet post gets
// its pings.
func TestNoPingForAViewerThatGotAFrame(t *testing.T) {
	const hb = time.Second
	h, _ := newTestHub(t, Config{Heartbeat: hb})
	_, busy := addViewer(t, h, false, "busy")
	_, quiet := addViewer(t, h, false, "quiet")
	rb, rq := startReader(t, busy), startReader(t, quiet)
	var n int64
	poll.Until(t, 20*time.Second, "two pings to the quiet viewer", func() bool {
		n++
		h.Publish(upd("busy", n)) // every poll, at most 20 ms apart: well within the interval
		_, _, p, _ := rq.snapshot()
		return p >= 2
	})
	poll.Until(t, 10*time.Second, "the busy viewer at the newest count", func() bool { u, _ := rb.last("busy"); return u.Count == n })
	if _, _, pings, _ := rb.snapshot(); pings != 0 {
		t.Errorf("the busy viewer got %d pings in %d updates; want none: it heard from the node within every interval", pings, n)
	}
}

// stalledViewer returns a viewer whose client never reads and whose buffers are tiny, so its
// socket fills after a few frames.
func stalledViewer(t *testing.T, h *Hub, post string) net.Conn {
	t.Helper()
	return addStalled(t, h, post, false)
}

// fullViewer is stalledViewer with its socket full before the hub takes it: small buffers alone
// left room for hundreds of frames now and then (the kernel took 24 KB in 488 writes, and the
// stall timeout never started), so a test that needs a full socket fills it itself. What the
// client would read is garbage: for a test that never reads it.
func fullViewer(t *testing.T, h *Hub, post string) net.Conn {
	t.Helper()
	return addStalled(t, h, post, true)
}

func addStalled(t *testing.T, h *Hub, post string, fill bool) net.Conn {
	t.Helper()
	held, _ := h.posts.Acquire(t.Context(), []string{post})
	h.Reserve(0)
	server, client := tcpPair(t)
	_ = client.(*net.TCPConn).SetReadBuffer(1024)
	raw, _ := server.(*net.TCPConn).SyscallConn()
	_ = raw.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 1024) })
	if fill { // write until the kernel takes no more (a write deadline passes with bytes unsent)
		chunk := make([]byte, 64<<10)
		for {
			_ = server.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := server.Write(chunk); err != nil {
				break
			}
		}
		_ = server.SetWriteDeadline(time.Time{})
	}
	_ = h.Add(Viewer{Conn: server, Posts: held, Snapshot: []update.Update{{PostID: post}}, Preamble: []byte(testPreamble)})
	return client
}

func TestStalledViewerDoesNotBlockOthersAndConverges(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1})
	stalled := stalledViewer(t, h, "hot")
	_, fast := addViewer(t, h, false, "hot")
	r := startReader(t, fast)
	const n = 20000
	for i := int64(1); i <= n; i++ {
		h.Publish(upd("hot", i))
	}
	poll.Until(t, 10*time.Second, "fast viewer at the newest count", func() bool { u, _ := r.last("hot"); return u.Count == n })
	if h.Stats().Conflated.Load() == 0 {
		t.Error("no conflation counted for a viewer that never read")
	}
	// The stalled viewer starts reading: it must end at the newest count, without a backlog.
	sr := startReader(t, stalled)
	poll.Until(t, 10*time.Second, "stalled viewer converges", func() bool { u, _ := sr.last("hot"); return u.Count == n })
	events, _, _, _ := sr.snapshot()
	if len(events) > n/2 {
		t.Errorf("stalled viewer got %d events; want a conflated few, not the backlog", len(events))
	}
}

func TestStallTimeoutDropsViewer(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1, StallTimeout: 50 * time.Millisecond, Heartbeat: 40 * time.Millisecond})
	fullViewer(t, h, "st")
	poll.Until(t, 10*time.Second, "viewer counted", func() bool { return h.Stats().Viewers.Load() == 1 })
	// Keep publishing until the socket has been full for longer than the stall timeout.
	i := int64(0)
	poll.Until(t, 10*time.Second, "stalled viewer dropped", func() bool {
		i++
		h.Publish(upd("st", i))
		return h.Stats().Stalled.Load() == 1 && h.Stats().Viewers.Load() == 0
	})
}

func TestFlushWindowBatchesFrames(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1, FlushWindow: 30 * time.Millisecond})
	_, c := addViewer(t, h, false, "w")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "snapshot", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 1 })
	poll.Until(t, 10*time.Second, "the snapshot's write counted", func() bool { return h.Stats().Writes.Load() == 1 })
	writesBefore := h.Stats().Writes.Load()
	for i := int64(1); i <= 4; i++ {
		h.Publish(upd("w", i))
	}
	poll.Until(t, 10*time.Second, "all four", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 5 })
	// Counts reach Stats at the end of the loop's iteration, just after the bytes.
	poll.Until(t, 10*time.Second, "the write counted", func() bool { return h.Stats().Writes.Load() > writesBefore })
	if got := h.Stats().Writes.Load() - writesBefore; got != 1 {
		t.Errorf("4 updates within one window took %d writes; want 1", got)
	}
}

// TestFlushWindowMultiPost: updates of two posts within one flush window reach a viewer of both
// in one write. The window is a second, so that three back-to-back publishes fall in it even
// when a loaded machine deschedules the test between them (30 ms did not, now and then).
func TestFlushWindowMultiPost(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1, FlushWindow: time.Second})
	_, c := addViewer(t, h, true, "x", "y")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "snapshots", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 2 })
	poll.Until(t, 10*time.Second, "the snapshots' write counted", func() bool { return h.Stats().Writes.Load() == 1 })
	writesBefore := h.Stats().Writes.Load()
	h.Publish(upd("x", 1))
	h.Publish(upd("y", 1))
	h.Publish(upd("x", 2))
	poll.Until(t, 10*time.Second, "three frames", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 5 })
	poll.Until(t, 10*time.Second, "the write counted", func() bool { return h.Stats().Writes.Load() > writesBefore })
	if got := h.Stats().Writes.Load() - writesBefore; got != 1 {
		t.Errorf("one window took %d writes; want 1", got)
	}
}

func TestPostRateCapSendsNewestAtRate(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1, PostRate: 10})
	_, c := addViewer(t, h, false, "storm")
	r := startReader(t, c)
	start := time.Now()
	for i := int64(1); i <= 1000; i++ {
		h.Publish(upd("storm", i))
	}
	poll.Until(t, 10*time.Second, "newest count", func() bool { u, _ := r.last("storm"); return u.Count == 1000 })
	events, _, _, _ := r.snapshot()
	elapsed := time.Since(start)
	if max := int(elapsed.Seconds()*10) + 3; len(events) > max {
		t.Errorf("got %d events in %v; want at most %d at 10/s", len(events), elapsed, max)
	}
}

func TestDrainClosesEveryViewer(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	var readers []*reader
	for i := 0; i < 20; i++ {
		_, c := addViewer(t, h, false, "d")
		readers = append(readers, startReader(t, c))
	}
	poll.Until(t, 10*time.Second, "viewers", func() bool { return h.Stats().Viewers.Load() == 20 })
	h.Drain(t.Context(), 50*time.Millisecond)
	for _, r := range readers {
		poll.Until(t, 10*time.Second, "eof", func() bool { _, _, _, eof := r.snapshot(); return eof })
	}
}

// TestDisconnectMidFrame drops a viewer whose socket holds half a frame and owes more: the loop
// removes it, releases its post and keeps serving the others.
func TestDisconnectMidFrame(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1})
	stalled := stalledViewer(t, h, "mid")
	_, fast := addViewer(t, h, false, "mid")
	r := startReader(t, fast)
	i := int64(0)
	poll.Until(t, 10*time.Second, "the stalled viewer to hold a partial write", func() bool {
		i++
		h.Publish(upd("mid", i))
		return h.Stats().Conflated.Load() > 0
	})
	stalled.Close()
	i++
	h.Publish(upd("mid", i))
	poll.Until(t, 10*time.Second, "the stalled viewer removed", func() bool { return h.Stats().Viewers.Load() == 1 })
	i++
	h.Publish(upd("mid", i))
	poll.Until(t, 10*time.Second, "the other viewer at the newest count", func() bool { u, _ := r.last("mid"); return u.Count == i })
}

// TestDisplayBudgetScalesWithTheRoom: under a display budget a post with more viewers is shown
// less often (never below the floor), and every viewer still reaches the newest count.
func TestDisplayBudgetScalesWithTheRoom(t *testing.T) {
	// 10 viewers on a budget of 0.1 frames/s would be one update every 100 s; the floor makes it 20/s.
	h, _ := newTestHub(t, Config{Loops: 1, DisplayBudget: 0.1, DisplayMinRate: 20})
	var readers []*reader
	for range 10 {
		_, c := addViewer(t, h, false, "hall")
		readers = append(readers, startReader(t, c))
	}
	poll.Until(t, 10*time.Second, "viewers", func() bool { return h.Stats().Viewers.Load() == 10 })
	start := time.Now()
	for i := int64(1); i <= 1000; i++ {
		h.Publish(upd("hall", i))
	}
	for _, r := range readers {
		poll.Until(t, 10*time.Second, "newest count", func() bool { u, _ := r.last("hall"); return u.Count == 1000 })
	}
	elapsed := time.Since(start)
	for _, r := range readers {
		events, _, _, _ := r.snapshot()
		if most := int(elapsed.Seconds()*20) + 3; len(events) > most {
			t.Errorf("got %d events in %v; want at most %d at 20/s", len(events), elapsed, most)
		}
	}
	if h.Stats().DisplayHeld.Load() == 0 {
		t.Error("DisplayHeld = 0; want the updates the display rate held back")
	}
}

// TestDisplayBudgetLeavesSmallRoomsAlone: a post whose viewers cost less than the budget at any
// rate sees every update.
func TestDisplayBudgetLeavesSmallRoomsAlone(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1, DisplayBudget: 1e9, DisplayMinRate: 4})
	_, c := addViewer(t, h, false, "small")
	r := startReader(t, c)
	for i := int64(1); i <= 50; i++ {
		h.Publish(upd("small", i))
		poll.Until(t, 10*time.Second, "the update", func() bool { u, _ := r.last("small"); return u.Count == i })
	}
	if got := h.Stats().DisplayHeld.Load(); got != 0 {
		t.Errorf("DisplayHeld = %d; want 0", got)
	}
}

// TestPacingSpreadsABigRoomOverTheGap: in a room of pacedMin viewers or more, the first frame
// after a quiet spell goes to everyone at once; a frame within the display gap after it is
// written over the gap, not in one burst, and reaches every viewer within it.
func TestPacingSpreadsABigRoomOverTheGap(t *testing.T) {
	const gap = 2 * time.Second
	h, _ := newTestHub(t, Config{Loops: 1, PostRate: float64(time.Second) / float64(gap)})
	var readers []*reader
	for range pacedMin + 44 {
		_, c := addViewer(t, h, false, "room")
		readers = append(readers, startReader(t, c))
	}
	poll.Until(t, 10*time.Second, "viewers", func() bool { return h.Stats().Viewers.Load() == pacedMin+44 })
	h.Publish(upd("room", 1))
	// One viewer with the first frame means the loop wrote it to all (one burst): the second
	// frame, published at once, comes well within the gap however slow the reader goroutines are.
	poll.Until(t, 10*time.Second, "the first frame", func() bool { u, _ := readers[0].last("room"); return u.Count == 1 })
	h.Publish(upd("room", 2))
	// When each viewer is first seen with the second frame: the pacer gives viewer i its frame
	// i/n of the gap after the first, so the arrivals spread over most of the gap; a held frame
	// would reach them all in one burst, at the gap's end.
	seen := make([]time.Time, len(readers))
	poll.Until(t, 10*time.Second, "the second frame at every viewer", func() bool {
		all := true
		for i, r := range readers {
			if seen[i].IsZero() {
				if u, _ := r.last("room"); u.Count == 2 {
					seen[i] = time.Now()
				} else {
					all = false
				}
			}
		}
		return all
	})
	first, last := seen[0], seen[0]
	for _, at := range seen {
		first, last = minTime(first, at), maxTime(last, at)
	}
	if spread := last.Sub(first); spread < gap/4 {
		t.Errorf("the second frame reached the viewers within %v; want it paced over the %v gap (a spread of at least %v)", spread, gap, gap/4)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

package e2e

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestNeverReadingViewersCostNothing puts 1,000 viewers that never read (raw connections with a
// tiny receive buffer that send the request and stop) among 2,000 normal ones. Once their sockets
// are full the node must make no write(2) for them (its writes per update stay those of the run
// without them: a node that retried them would make half as many again), every update must reach
// every normal viewer, and the node's resident memory must stay bounded: a stalled viewer costs
// at most one pending write, never a queue.
//
// What that buys in latency is a benchmark's to judge, not CI's: two runs without stalled viewers
// on this 2-core machine, with other packages' tests beside them, gave p99 52.8 and 36.7 ms, more
// apart than the 1.2x being judged. With LIKES_BENCH_STALLED=1 (run alone, see RELIABILITY.md) the
// normal viewers' p99 must also stay within 1.2x of the mean of the runs without them.
func TestNeverReadingViewersCostNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 viewers; not in -short")
	}
	// A node with headroom, so that latency measures the engine rather than a queue: at 10,000
	// viewers and 25 updates/s this 2-core machine's node is saturated, and p99 moved by 20-37%
	// between two runs without stalled viewers, more than the 1.2x being judged. With 2,000 at
	// 10 updates/s the two runs without them agreed within 10%, and the stalled viewers are a
	// third of the node's viewers instead of a tenth. Phases of 30 s, so that a one-off pause of
	// the node (a collection, the periodic memory release) delays well under 1% of the samples.
	const normal, likeEvery, likesPerPhase = 2000, 100 * time.Millisecond, 300
	rds := redistest.Start(t)
	writer := StartWriter(t, rds.URL)
	// Every update shown (DISPLAY_BUDGET=0): under the default budget the 1,000 stalled viewers,
	// who follow the measured post too, would lower its display rate from 12 to 8 a second and
	// make the normal viewers take turns, which is the budget at work, not a stalled viewer's cost.
	node := StartFanoutNoRace(t, rds.URL, "DISPLAY_BUDGET=0")
	// The longest post id makes the longest frames (about 190 bytes), so fewer updates fill the
	// stalled viewers' sockets.
	post := "stalled-" + strings.Repeat("x", 56)
	likeMany(t, writer.URL, post, "seed", 1, 1)
	crowd := StartCrowd(t, []string{node.Addr}, post, normal, 2*time.Minute)
	crowd.WaitCount(t, 20*time.Second, 1)

	// measure runs a phase of likes and returns the normal viewers' p99 and the node's write(2)
	// calls per update it fanned out.
	measure := func(phase, users string) (time.Duration, float64) {
		writes, updates := node.Metric(t, "likes_fanout_writes_total"), node.Metric(t, "likes_fanout_updates_total")
		crowd.Measure(t, true)
		flow := clienttest.StartLikeFlow(t, writer.URL, post, users, likeEvery)
		poll.Until(t, 90*time.Second, phase+" likes", func() bool { return flow.Sent() >= likesPerPhase })
		flow.Stop()
		if n := flow.Failed(); n > 0 {
			t.Fatalf("%s: %d likes failed", phase, n)
		}
		crowd.WaitCount(t, 10*time.Second, clienttest.CountOf(t, writer.URL, post))
		crowd.Measure(t, false)
		s := crowd.Status(t)
		p99 := time.Duration(s.P99us) * time.Microsecond
		perUpdate := (node.Metric(t, "likes_fanout_writes_total") - writes) /
			max(1, node.Metric(t, "likes_fanout_updates_total")-updates)
		t.Logf("%s: %d events, p50 %dµs p99 %dµs p99.9 %dµs, %.0f writes per update",
			phase, s.Samples, s.P50us, s.P99us, s.P999us, perUpdate)
		if s.Samples < 10*normal {
			t.Fatalf("%s: %d latency samples; want at least 10 per viewer", phase, s.Samples)
		}
		return p99, perUpdate
	}

	measure("warmup", "warmup")
	before, writesBefore := measure("baseline", "baseline")
	rssBefore := node.Metric(t, "process_resident_memory_bytes")

	// The stalled viewers follow the measured post and 63 filler posts that nobody else follows:
	// likes of the fillers fill the stalled viewers' sockets without costing the normal viewers.
	fillers := make([]string, 63)
	for i := range fillers {
		fillers[i] = fmt.Sprintf("filler-%02d-%s", i, strings.Repeat("x", 54))
	}
	stalled := openNeverReading(t, node.Addr, "/sse?posts="+post+","+strings.Join(fillers, ","), 1000)
	poll.Until(t, 20*time.Second, "the stalled viewers on the node", func() bool { return node.Metric(t, "likes_fanout_viewers") == normal+1000 })
	conflated := node.Metric(t, "likes_fanout_events_conflated_total")
	// Fill the stalled viewers' sockets first, so the measured run is the steady state in which
	// their frames are conflated, not written: like until the node reports conflation.
	fills := 0
	for ; fills < 4000 && node.Metric(t, "likes_fanout_events_conflated_total") <= conflated; fills += 63 {
		for _, f := range fillers {
			likeMany(t, writer.URL, f, "fill"+strconv.Itoa(fills), 1, 1)
		}
	}
	t.Logf("stalled viewers' sockets full after %d more likes", fills)
	conflated = node.Metric(t, "likes_fanout_events_conflated_total")
	crowd.WaitCount(t, 20*time.Second, clienttest.CountOf(t, writer.URL, post))
	withStalled, writesWith := measure("with 1,000 stalled", "stalled")
	rssAfter := node.Metric(t, "process_resident_memory_bytes")
	if got := node.Metric(t, "likes_fanout_events_conflated_total"); got <= conflated {
		t.Errorf("conflated events: got %v; want more than %v (the stalled viewers' sockets never filled)", got, conflated)
	}
	if got := node.Metric(t, "likes_fanout_viewers"); got != normal+1000 {
		t.Errorf("viewers: got %v; want %d (stalled viewers are kept until STALL_TIMEOUT)", got, normal+1000)
	}

	// The baseline again without them, so that drift in the machine's load cancels out.
	for _, c := range stalled {
		_ = c.Close()
	}
	poll.Until(t, 20*time.Second, "the stalled viewers to go", func() bool { return node.Metric(t, "likes_fanout_viewers") == normal })
	after, writesAfter := measure("baseline again", "again")
	// Heartbeats and the odd split write make a few more; retrying the stalled viewers would make
	// 1,000 more per update.
	if limit := max(writesBefore, writesAfter) * 1.05; writesWith > limit {
		t.Errorf("writes per update with 1,000 stalled viewers %.0f; want at most %.0f (1.05 x the most without them): the node writes to full sockets",
			writesWith, limit)
	}
	baseline := (before + after) / 2
	if limit := baseline * 12 / 10; os.Getenv("LIKES_BENCH_STALLED") == "1" && withStalled > limit {
		t.Errorf("p99 with 1,000 stalled viewers %v; want at most 1.2 x %v (mean of the runs without them) = %v", withStalled, baseline, limit)
	}
	const perStalled = 64 << 10
	t.Logf("node RSS %.1f MiB before the stalled viewers, %.1f MiB with them after %d updates they did not read",
		rssBefore/(1<<20), rssAfter/(1<<20), fills+100)
	if rssAfter-rssBefore > 1000*perStalled {
		t.Errorf("node RSS grew by %.1f MiB; want at most %d KiB per stalled viewer", (rssAfter-rssBefore)/(1<<20), perStalled>>10)
	}
}

// openNeverReading opens n streams that send their request and never read. Their small receive
// buffer and the smallest segment size Linux allows keep the node's kernel send buffer for them
// small (Linux grows it from the segment size and the congestion window: at loopback's 64 KiB
// segments it takes megabytes per connection), so that the node's writes to them block after a
// few hundred frames, as they would over a slow real network. Closed when the test ends.
func openNeverReading(t testing.TB, addr, path string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
			if serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 88)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\n\r\n")
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("stalled viewer %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := c.Write(req); err != nil {
			t.Fatalf("stalled viewer %d: %v", i, err)
		}
	}
	t.Logf("%s never-reading viewers open", strconv.Itoa(n))
	return conns
}

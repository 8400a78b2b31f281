package worker

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/loadgen/internal/hist"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// sseServer speaks the fanout wire format (snapshot, then live updates, net/http's chunked
// coding) so the worker's read path can be tested against controlled streams.
type sseServer struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int64
	subs   map[chan []byte]string // subscriber -> post
	status int                    // non-zero: answer every stream with this status
}

func newSSEServer(t *testing.T, status int) *sseServer {
	s := &sseServer{counts: map[string]int64{}, subs: map[chan []byte]string{}, status: status}
	s.Server = httptest.NewServer(http.HandlerFunc(s.stream))
	t.Cleanup(s.Close)
	return s
}

func (s *sseServer) stream(w http.ResponseWriter, r *http.Request) {
	if s.status != 0 {
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"full"}`, s.status)
		return
	}
	post := r.URL.Path[len("/sse/"):]
	w.Header().Set("Content-Type", "text/event-stream")
	ch := make(chan []byte, 1024)
	s.mu.Lock()
	s.subs[ch] = post
	snap := frame(post, s.counts[post], 1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}()
	_, _ = w.Write(sse.AppendRetry(nil, 1000))
	_, _ = w.Write(snap)
	w.(http.Flusher).Flush()
	for {
		select {
		case f, ok := <-ch:
			if !ok {
				return
			}
			_, _ = w.Write(f)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func frame(post string, count, ts int64) []byte {
	u := update.Update{PostID: post, Count: count, TS: ts}
	return sse.AppendEvent(nil, strconv.AppendInt(nil, count, 10), sse.EventCount, u.AppendJSON(nil))
}

// like bumps post's count and sends the frame to its subscribers, stamped with ts.
func (s *sseServer) like(post string, ts int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[post]++
	f := frame(post, s.counts[post], ts)
	for ch, p := range s.subs {
		if p == post {
			ch <- f
		}
	}
}

// dropAll ends every stream from the server side.
func (s *sseServer) dropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		close(ch)
		delete(s.subs, ch)
	}
}

// startWorker runs Serve in process over pipes and returns its client.
func startWorker(t *testing.T) *Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { // exits when Serve returns (quit or closed stdin)
		done <- Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	c := NewClient("test-worker", inW, outR, func(timeout time.Duration) error {
		select {
		case err := <-done:
			return err
		case <-time.After(timeout):
			t.Error("worker did not stop")
			return nil
		}
	})
	t.Cleanup(func() {
		if err := c.Close(10 * time.Second); err != nil {
			t.Errorf("close worker: %v", err)
		}
	})
	return c
}

func call(t *testing.T, c *Client, req Request) Reply {
	t.Helper()
	rep, err := c.Call(req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func waitStatus(t *testing.T, c *Client, cond func(*Status) bool) *Status {
	t.Helper()
	var st *Status
	poll.Check(t, 15*time.Second, func() error {
		if st = call(t, c, Request{Op: OpStatus}).Status; !cond(st) {
			return fmt.Errorf("status never reached the condition: %+v", st)
		}
		return nil
	})
	return st
}

func TestDeliveryConvergenceAndLatency(t *testing.T) {
	srv := newSSEServer(t, 0)
	c := startWorker(t)
	call(t, c, Request{Op: OpInit, Init: &Init{
		Nodes: []string{srv.URL}, Posts: []string{"a", "b"}, Sources: []string{"127.0.0.2", "127.0.0.3"},
		ReadBuffer: 100, // small, so frames split across reads
	}})
	call(t, c, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 20, Rate: 0}})
	waitStatus(t, c, func(s *Status) bool { return s.Open == 20 })
	// Warmup likes before the phase begins must not count.
	for range 3 {
		srv.like("a", 1)
	}
	now := time.Now().UnixMicro()
	b := call(t, c, Request{Op: OpBegin, Begin: &Begin{Base: []int64{3, 0}, WindowStartUS: now, WindowEndUS: now + 3600e6}}).Begin
	if b.Viewers[0] != 10 || b.Viewers[1] != 10 {
		t.Fatalf("viewers per post %v; want [10 10]", b.Viewers)
	}
	for i := range 50 {
		srv.like("a", now+int64(i))
	}
	for range 30 {
		srv.like("b", now-1) // before the window: delivered, but no latency sample
	}
	conv := call(t, c, Request{Op: OpConverge, Converge: &Converge{Final: []int64{53, 30}, TimeoutMS: 5000}}).Converge
	if conv.Converged != 20 || conv.Total != 20 {
		t.Fatalf("converged %d of %d; want 20 of 20", conv.Converged, conv.Total)
	}
	// Ask for a window inside the likes: counts 14..43 of a, all of b.
	rep := call(t, c, Request{Op: OpReport, Report: &ReportRange{Lo: []int64{13, 0}, Hi: []int64{43, 30}}}).Report
	if rep.Received[0] != 30*10 || rep.Received[1] != 30*10 {
		t.Fatalf("received %v; want [300 300]", rep.Received)
	}
	var h hist.Histogram
	h.Merge(rep.Latency)
	if got := h.Count(); got != 50*10 {
		t.Fatalf("latency samples %d; want 500 (post a's likes only)", got)
	}
	st := call(t, c, Request{Op: OpStatus}).Status
	// 20 snapshots + 3 warmup likes x 10 + 50 x 10 + 30 x 10.
	if st.Events != 20+30+500+300 {
		t.Fatalf("events %d; want 850", st.Events)
	}
	if st.Dropped != 0 || st.Failed != 0 || st.Malformed != 0 {
		t.Fatalf("status %+v; want no drops, failures or malformed events", st)
	}
	if st.PrivateBytes <= 0 {
		t.Fatalf("private memory %d; want the worker's own, above 0", st.PrivateBytes)
	}
}

func TestRefusedAndDropped(t *testing.T) {
	full := newSSEServer(t, http.StatusServiceUnavailable)
	ok := newSSEServer(t, 0)
	c := startWorker(t)
	call(t, c, Request{Op: OpInit, Init: &Init{Nodes: []string{full.URL, ok.URL}, Posts: []string{"p"}}})
	call(t, c, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 10, Rate: 1000}})
	st := waitStatus(t, c, func(s *Status) bool { return s.Pending == 0 })
	if st.Refused != 5 || st.Open != 5 || st.Failed != 0 {
		t.Fatalf("status %+v; want 5 refused (503), 5 open, 0 failed", st)
	}
	ok.dropAll()
	st = waitStatus(t, c, func(s *Status) bool { return s.Dropped == 5 })
	if st.Open != 0 {
		t.Fatalf("open %d after the server dropped every stream; want 0", st.Open)
	}
}

func TestFailedConnectNamesReason(t *testing.T) {
	srv := newSSEServer(t, 0)
	url := srv.URL
	srv.Close() // nothing listens there now
	c := startWorker(t)
	call(t, c, Request{Op: OpInit, Init: &Init{Nodes: []string{url}, Posts: []string{"p"}}})
	call(t, c, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 3}})
	st := waitStatus(t, c, func(s *Status) bool { return s.Pending == 0 })
	if st.Failed != 3 || st.Errors["connection refused"] != 3 {
		t.Fatalf("status %+v; want 3 failed for connection refused", st)
	}
}

func TestBadRequests(t *testing.T) {
	c := startWorker(t)
	for _, req := range []Request{
		{Op: "nope"},
		{Op: OpConnect, Connect: &Connect{Count: 1}}, // before init
		{Op: OpInit, Init: &Init{Nodes: []string{"ftp://x"}, Posts: []string{"p"}}},
		{Op: OpReport, Report: &ReportRange{}}, // before begin
	} {
		if _, err := c.Call(req); err == nil {
			t.Errorf("request %+v: err = nil; want an error", req)
		}
	}
}

// silentServer accepts connections and never answers, like an overloaded node.
func silentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // exits when the listener is closed
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestHandshakeTimeoutAndAbandon(t *testing.T) {
	url := silentServer(t)
	c := startWorker(t)
	call(t, c, Request{Op: OpInit, Init: &Init{Nodes: []string{url}, Posts: []string{"p"}, DialTimeoutMS: 300}})
	call(t, c, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 4}})
	st := waitStatus(t, c, func(s *Status) bool { return s.Pending == 0 })
	if st.Failed != 4 || st.Errors["timeout"] != 4 {
		t.Fatalf("status %+v; want 4 handshakes failed by timeout", st)
	}

	c2 := startWorker(t)
	call(t, c2, Request{Op: OpInit, Init: &Init{Nodes: []string{url}, Posts: []string{"p"}, DialTimeoutMS: 60000}})
	call(t, c2, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 1000, Rate: 500}})
	waitStatus(t, c2, func(s *Status) bool { return s.Wanted == 1000 })
	call(t, c2, Request{Op: OpAbandon}) // well before the 60 s handshake timeout
	st = waitStatus(t, c2, func(s *Status) bool { return s.Pending == 0 })
	if st.Failed != 1000 || st.Open != 0 {
		t.Fatalf("status %+v; want all 1000 failed (abandoned) at once", st)
	}
}

// TestEveryEventCountedUnderVolume sends many updates as fast as the server can write them: the
// worker must count every one (the node never conflates here, so anything short is the worker's
// loss).
func TestEveryEventCountedUnderVolume(t *testing.T) {
	srv := newSSEServer(t, 0)
	c := startWorker(t)
	call(t, c, Request{Op: OpInit, Init: &Init{Nodes: []string{srv.URL}, Posts: []string{"a"}, ReadBuffer: 1000}})
	call(t, c, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 10}})
	waitStatus(t, c, func(s *Status) bool { return s.Open == 10 })
	now := time.Now().UnixMicro()
	call(t, c, Request{Op: OpBegin, Begin: &Begin{Base: []int64{0}, WindowStartUS: now, WindowEndUS: now + 3600e6}})
	const likes = 20000
	for i := range likes {
		srv.like("a", now+int64(i))
	}
	conv := call(t, c, Request{Op: OpConverge, Converge: &Converge{Final: []int64{likes}, TimeoutMS: 20000}}).Converge
	if conv.Converged != 10 {
		t.Fatalf("converged %d of 10", conv.Converged)
	}
	rep := call(t, c, Request{Op: OpReport, Report: &ReportRange{Lo: []int64{0}, Hi: []int64{likes}}}).Report
	if rep.Received[0] != 10*likes {
		t.Fatalf("received %d; want %d (every update to every viewer)", rep.Received[0], 10*likes)
	}
}

// react sends post's subscribers a frame of version ts carrying reactions (a JSON object), as a
// fanout node does: the count event, then the reactions event.
func (s *sseServer) react(post string, ts int64, reactions string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := update.Update{PostID: post, Count: s.counts[post], TS: ts, Reactions: reactions}
	f := sse.AppendEvent(nil, strconv.AppendInt(nil, ts, 10), sse.EventCount, u.AppendCount(nil))
	f = sse.AppendEvent(f, nil, sse.EventReactions, u.AppendReactions(nil))
	for ch, p := range s.subs {
		if p == post {
			ch <- f
		}
	}
}

// TestReactionFramesDisplayedAndSampled: each viewer counts the window's frames and keeps the sum
// of its newest reaction counts, which convergence checks; the sampled viewers keep every frame's
// count, version and arrival.
func TestReactionFramesDisplayedAndSampled(t *testing.T) {
	srv := newSSEServer(t, 0)
	c := startWorker(t)
	call(t, c, Request{Op: OpInit, Init: &Init{Nodes: []string{srv.URL}, Posts: []string{"room"}}})
	call(t, c, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 10}})
	waitStatus(t, c, func(s *Status) bool { return s.Open == 10 })
	now := time.Now().UnixMicro()
	call(t, c, Request{Op: OpBegin, Begin: &Begin{Base: []int64{0}, WindowStartUS: now, WindowEndUS: now + 3600e6, SampleViewers: 3}})
	srv.react("room", now-1, `{"clap":1}`) // before the window: shown, not counted
	for i := range int64(5) {
		srv.react("room", now+i, fmt.Sprintf(`{"clap":%d,"heart":1}`, i+2))
	}
	conv := call(t, c, Request{Op: OpConverge, Converge: &Converge{Final: []int64{0}, FinalReactions: []int64{7}, TimeoutMS: 5000}}).Converge
	if conv.Converged != 10 {
		t.Fatalf("converged %d of %d; want 10 on 7 reactions (6 claps and a heart)", conv.Converged, conv.Total)
	}
	rep := call(t, c, Request{Op: OpReport, Report: &ReportRange{Lo: []int64{0}, Hi: []int64{0}}}).Report
	if len(rep.Displays) != 1 || rep.Displays[0].Viewers != 10 || rep.Displays[0].Frames[5] != 10 {
		t.Fatalf("displays %+v; want 10 viewers of node 0 with 5 frames each", rep.Displays)
	}
	if len(rep.Sampled) != 3 {
		t.Fatalf("%d sampled viewers; want 3", len(rep.Sampled))
	}
	for _, s := range rep.Sampled {
		if len(s.Frames) != 5 || s.Frames[0][1] != now || s.Frames[4][1] != now+4 || s.Frames[4][2] < now {
			t.Fatalf("sampled frames %v; want the window's 5, versions %d..%d, arriving after them", s.Frames, now, now+4)
		}
	}
	if st := call(t, c, Request{Op: OpStatus}).Status; st.Reactions != 60 || st.Malformed != 0 {
		t.Fatalf("%d reactions events, %d malformed; want 60 and 0", st.Reactions, st.Malformed)
	}
	// A converge on other totals does not succeed.
	if conv := call(t, c, Request{Op: OpConverge, Converge: &Converge{Final: []int64{0}, FinalReactions: []int64{8}, TimeoutMS: 50}}).Converge; conv.Converged != 0 {
		t.Fatalf("converged %d on 8 reactions; want 0", conv.Converged)
	}
}

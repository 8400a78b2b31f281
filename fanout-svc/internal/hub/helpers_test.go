package hub

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
	"github.com/likes/likes/pkg/update"
)

// recordingSubscriber stands in for the relay: the hub's contract with Redis is only "subscribed
// now" and "unsubscribe now", and these tests are about sockets.
type recordingSubscriber struct {
	mu    sync.Mutex
	subs  map[string]int
	unsub map[string]int
}

func newRecordingSubscriber() *recordingSubscriber {
	return &recordingSubscriber{subs: map[string]int{}, unsub: map[string]int{}}
}

func (r *recordingSubscriber) Subscribe(_ context.Context, post string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs[post]++
	return nil
}

func (r *recordingSubscriber) Unsubscribe(held []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, post := range held {
		r.unsub[post]++
	}
}

func (r *recordingSubscriber) counts(post string) (subs, unsubs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.subs[post], r.unsub[post]
}

func newTestHub(t testing.TB, cfg Config) (*Hub, *recordingSubscriber) {
	t.Helper()
	sub := newRecordingSubscriber()
	return startHub(t, cfg, posts.Config{}, sub), sub
}

// startHub starts a hub and its registry of posts on sub, with a short grace period unless pcfg
// sets one, both closed when the test ends: the hub first, as the node closes them.
func startHub(t testing.TB, cfg Config, pcfg posts.Config, sub posts.Subscriber) *Hub {
	t.Helper()
	if pcfg.UnsubscribeGrace == 0 {
		pcfg.UnsubscribeGrace = 20 * time.Millisecond
	}
	reg := posts.New(pcfg, sub)
	t.Cleanup(reg.Close)
	h, err := New(cfg, reg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// tcpPair returns both ends of a loopback TCP connection: the server end for the hub, the client
// end for the test.
func tcpPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() { // exits after one accept or when the listener closes
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close() })
	return server, client
}

// reader consumes a viewer's stream in the background with the shared SSE client and keeps what
// it decoded.
type reader struct {
	conn    *sseclient.Conn
	mu      sync.Mutex
	events  []update.Update
	ids     []string
	watch   []update.Watching // watching events, apart from counts
	watchID int               // watching events that carried an id (there must be none)
	raw     []byte            // the body as read, while keepRaw is set
	keepRaw bool
	eof     bool
	done    chan struct{}
}

func startReader(t testing.TB, c net.Conn) *reader {
	r := &reader{conn: sseclient.New(c), done: make(chan struct{})}
	r.conn.Tap(func(body []byte) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.keepRaw {
			r.raw = append(r.raw, body...)
		}
	})
	go func() { // exits when the connection closes
		defer close(r.done)
		_ = r.conn.Run(context.Background(), r.record)
		r.mu.Lock()
		r.eof = true
		r.mu.Unlock()
	}()
	t.Cleanup(func() { _ = r.conn.Close(); <-r.done })
	return r
}

func (r *reader) record(e *sse.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if string(e.Event) == sse.EventWatching {
		if w, err := update.ParseWatching(e.Data); err == nil {
			r.watch = append(r.watch, w)
		}
		if e.HasID {
			r.watchID++
		}
		return
	}
	if u, err := update.Parse(e.Data); err == nil {
		r.events = append(r.events, u)
		r.ids = append(r.ids, string(e.ID))
	}
}

func (r *reader) snapshot() ([]update.Update, []string, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]update.Update(nil), r.events...), append([]string(nil), r.ids...), r.conn.Comments(), r.eof
}

func (r *reader) last(post string) (update.Update, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].PostID == post {
			return r.events[i], true
		}
	}
	return update.Update{}, false
}

const testPreamble = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nretry: 1000\n\n"

// addViewer acquires posts, hands a fresh connection to the hub and returns the client side.
func addViewer(t testing.TB, h *Hub, multi bool, held ...string) (net.Conn, net.Conn) {
	t.Helper()
	acquired, err := h.posts.Acquire(context.Background(), held)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Reserve(0) {
		t.Fatal("reserve refused")
	}
	snap := make([]update.Update, len(held))
	for i, p := range held {
		snap[i] = update.Update{PostID: p}
	}
	server, client := tcpPair(t)
	if err := h.Add(Viewer{Conn: server, Posts: acquired, Snapshot: snap, Multi: multi, Preamble: []byte(testPreamble)}); err != nil {
		t.Fatal(err)
	}
	return server, client
}

func upd(post string, count int64) update.Update {
	return update.Update{PostID: post, Count: count, TS: 1000 + count}
}

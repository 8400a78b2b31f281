package likes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/likes/likes/pkg/writerapi"
)

// countingWriter answers the writer's like API: one like per user per post, the new count back.
type countingWriter struct {
	mu     sync.Mutex
	counts map[string]int64
	users  map[string]bool
	fail   bool
}

func (c *countingWriter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	post := strings.TrimPrefix(r.URL.Path, "/like/")
	user, err := userOf(r)
	if err != nil {
		http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusUnauthorized)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		http.Error(w, `{"error":"redis unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	liked := !c.users[post+"/"+user]
	if liked {
		c.users[post+"/"+user] = true
		c.counts[post]++
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"post_id": post, "count": c.counts[post], "liked": liked})
}

func newWriter(t *testing.T) (*countingWriter, *httptest.Server) {
	cw := &countingWriter{counts: map[string]int64{}, users: map[string]bool{}}
	srv := httptest.NewServer(cw)
	t.Cleanup(srv.Close)
	return cw, srv
}

func TestClosedLoopFreshUsersAndMaxCounts(t *testing.T) {
	forEachIdentity(t, testClosedLoopFreshUsersAndMaxCounts)
}

func testClosedLoopFreshUsersAndMaxCounts(t *testing.T, identity []Option) {
	cw, srv := newWriter(t)
	l := New(srv.URL, []string{"a", "b", "c"}, "u", 8, 5*time.Second, identity...)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	l.Closed(ctx, 8)
	acked, errs, _ := l.Recorder().Totals()
	if acked < 10 || errs != 0 {
		t.Fatalf("acked %d, errors %d; want many acked and no errors (a repeated user would fail)", acked, errs)
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var total int64
	for p, post := range []string{"a", "b", "c"} {
		if got := l.Recorder().MaxCounts()[p]; got != cw.counts[post] {
			t.Errorf("post %s max acked count %d; want the writer's final count %d", post, got, cw.counts[post])
		}
		total += cw.counts[post]
	}
	if total != acked {
		t.Errorf("writer counted %d likes; loadgen acked %d", total, acked)
	}
}

// TestOpenLoopRateAndWindow: the open loop never sends faster than its rate, counts every like
// it sends once (acknowledged, failed or skipped), and a window that spans the run receives every
// acknowledgement with one latency sample each. How close the loop comes to its rate depends on
// the machine's load, so it is measured by the ramp, not asserted here.
func TestOpenLoopRateAndWindow(t *testing.T) {
	_, srv := newWriter(t)
	l := New(srv.URL, []string{"a"}, "u", 16, 5*time.Second)
	defer l.Close()
	start := time.Now()
	w := &Window{Start: start, End: start.Add(time.Hour)}
	l.Recorder().SetWindow(w)
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(500*time.Millisecond))
	defer cancel()
	const rate = 200
	l.Open(ctx, rate, 64)
	elapsed := time.Since(start)
	acked, errs, skipped := l.Recorder().Totals()
	if most := int64(rate*elapsed.Seconds()) + 1; acked+errs+skipped > most {
		t.Fatalf("sent %d likes in %v at %d/s; want at most %d", acked+errs+skipped, elapsed, rate, most)
	}
	if acked == 0 || errs != 0 {
		t.Fatalf("acked %d, errors %d (last %q); want some acknowledged and no errors", acked, errs, l.Recorder().LastError())
	}
	if got := w.Acked.Load(); got != acked {
		t.Fatalf("window spanning the run acked %d; want all %d", got, acked)
	}
	if w.Latency.Count() != uint64(w.Acked.Load()) {
		t.Fatalf("latency samples %d; want one per acked like in the window (%d)", w.Latency.Count(), w.Acked.Load())
	}
}

func TestErrorsAreCounted(t *testing.T) {
	cw, srv := newWriter(t)
	// Under the lock: the race detector sees no order in the loopback bytes between this test and
	// the server (the client writes with write(2) itself, which net's race annotations do not see).
	cw.mu.Lock()
	cw.fail = true
	cw.mu.Unlock()
	l := New(srv.URL, []string{"a"}, "u", 2, time.Second)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	l.Closed(ctx, 2)
	acked, errs, _ := l.Recorder().Totals()
	if acked != 0 || errs == 0 || !strings.Contains(l.Recorder().LastError(), "503") {
		t.Fatalf("acked %d, errors %d, last %q; want only errors naming the 503", acked, errs, l.Recorder().LastError())
	}
}

// likeOnce sends one like on a connection of l's pool, as a run would.
func likeOnce(l *Load) {
	c := l.getConn()
	l.send(context.Background(), c, []job{{post: 0}})
	l.putConn(c)
}

// serve starts a server with h that counts the connections it accepts.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// answerJSON answers a like the way the writer does.
func answerJSON(w http.ResponseWriter, count int64, liked bool) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(writerapi.AppendLikeReply(nil, "a", count, liked))
}

// TestAnswers: each kind of answer becomes an acknowledgement or the error it should.
func TestAnswers(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		wantErr   string // substring of the like's error; "" = acknowledged
		wantCount int64
	}{
		{name: "200 liked", handler: func(w http.ResponseWriter, _ *http.Request) { answerJSON(w, 41, true) }, wantCount: 41},
		{name: "200 liked:false", handler: func(w http.ResponseWriter, _ *http.Request) { answerJSON(w, 41, false) },
			wantErr: "like by fresh user u1 not counted"},
		{name: "503", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":"storage unavailable, retry"}`, http.StatusServiceUnavailable)
		}, wantErr: "status 503"},
		{name: "429", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTooManyRequests) },
			wantErr: "status 429"},
		{name: "chunked", handler: func(w http.ResponseWriter, _ *http.Request) {
			// Flushing before the handler ends makes the server send the body chunked.
			_, _ = io.WriteString(w, `{"post_id":"a",`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `"count":7,"liked":true}`)
		}, wantCount: 7},
		{name: "200 not JSON", handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") },
			wantErr: `decode answer: no "count" number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, tt.handler)
			l := New(srv.URL, []string{"a"}, "u", 1, 5*time.Second)
			defer l.Close()
			likeOnce(l)
			acked, errs, _ := l.Recorder().Totals()
			if tt.wantErr == "" {
				if acked != 1 || errs != 0 || l.Recorder().MaxCounts()[0] != tt.wantCount {
					t.Fatalf("acked %d, errors %d (last %q), count %d; want 1 acked with count %d",
						acked, errs, l.Recorder().LastError(), l.Recorder().MaxCounts()[0], tt.wantCount)
				}
				return
			}
			if acked != 0 || errs != 1 || !strings.Contains(l.Recorder().LastError(), tt.wantErr) {
				t.Fatalf("acked %d, errors %d, last %q; want 1 error containing %q", acked, errs, l.Recorder().LastError(), tt.wantErr)
			}
		})
	}
}

// TestKeepAlive: likes in a row share one connection; after an error answer (framed, so the
// connection stays in step) too.
func TestKeepAlive(t *testing.T) {
	var n atomic.Int64
	srv, conns := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		answerJSON(w, n.Load(), true)
	})
	l := New(srv.URL, []string{"a"}, "u", 1, 5*time.Second)
	defer l.Close()
	for range 6 {
		likeOnce(l)
	}
	if acked, errs, _ := l.Recorder().Totals(); acked != 3 || errs != 3 {
		t.Fatalf("acked %d, errors %d; want 3 and 3", acked, errs)
	}
	if got := conns.Load(); got != 1 {
		t.Fatalf("server accepted %d connections; want 1", got)
	}
}

// TestConnectionClose: an answer with Connection: close is a good answer; the next like dials.
func TestConnectionClose(t *testing.T) {
	srv, conns := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		answerJSON(w, 1, true)
	})
	l := New(srv.URL, []string{"a"}, "u", 1, 5*time.Second)
	defer l.Close()
	for range 3 {
		likeOnce(l)
	}
	if acked, errs, _ := l.Recorder().Totals(); acked != 3 || errs != 0 {
		t.Fatalf("acked %d, errors %d (last %q); want 3 acked", acked, errs, l.Recorder().LastError())
	}
	if got := conns.Load(); got != 3 {
		t.Fatalf("server accepted %d connections; want 3 (one per answer)", got)
	}
}

// TestClosedMidAnswer: a writer that drops the connection in the middle of an answer costs that
// like (an error); the next like reconnects and is acknowledged.
func TestClosedMidAnswer(t *testing.T) {
	var n atomic.Int64
	srv, conns := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			nc, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 60\r\n\r\n{\"post_id\":\"a\",")
			_ = bw.Flush()
			_ = nc.Close()
			return
		}
		answerJSON(w, 2, true)
	})
	l := New(srv.URL, []string{"a"}, "u", 1, 5*time.Second)
	defer l.Close()
	likeOnce(l)
	if _, errs, _ := l.Recorder().Totals(); errs != 1 || !strings.Contains(l.Recorder().LastError(), "in the middle of an answer") {
		t.Fatalf("errors %d, last %q; want 1 naming the cut answer", errs, l.Recorder().LastError())
	}
	likeOnce(l)
	if acked, errs, _ := l.Recorder().Totals(); acked != 1 || errs != 1 {
		t.Fatalf("acked %d, errors %d; want the like after the cut acknowledged", acked, errs)
	}
	if got := conns.Load(); got != 2 {
		t.Fatalf("server accepted %d connections; want 2", got)
	}
}

// TestTimeout: a writer that does not answer within the timeout costs the like an error saying
// so, and the closed loop stops within about the timeout once ctx ends.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done(): // the client gave up and closed the connection
		case <-release:
		}
	})
	const timeout = 100 * time.Millisecond
	l := New(srv.URL, []string{"a"}, "u", 4, timeout)
	defer l.Close()
	start := time.Now()
	likeOnce(l)
	if _, errs, _ := l.Recorder().Totals(); errs != 1 || !strings.Contains(l.Recorder().LastError(), "no answer within 100ms") {
		t.Fatalf("errors %d, last %q; want 1 timeout", errs, l.Recorder().LastError())
	}
	if took := time.Since(start); took < timeout || took > 10*timeout {
		t.Fatalf("like took %v; want about the timeout %v", took, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start = time.Now()
	l.Closed(ctx, 4)
	if took := time.Since(start); took > 10*timeout {
		t.Fatalf("closed loop took %v to stop; want about the timeout %v", took, timeout)
	}
}

// TestPipeline: with pipelining, 16 writers share 4 connections, and every like is still
// counted once with its own count.
func TestPipeline(t *testing.T) { forEachIdentity(t, testPipeline) }

func testPipeline(t *testing.T, identity []Option) {
	cw := &countingWriter{counts: map[string]int64{}, users: map[string]bool{}}
	srv, conns := serve(t, cw.ServeHTTP)
	l := New(srv.URL, []string{"a", "b"}, "u", 4, 5*time.Second, append(identity, WithPipeline(4))...)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	l.Closed(ctx, 16)
	acked, errs, _ := l.Recorder().Totals()
	if acked < 16 || errs != 0 {
		t.Fatalf("acked %d, errors %d (last %q); want many acked and no errors", acked, errs, l.Recorder().LastError())
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if total := cw.counts["a"] + cw.counts["b"]; total != acked {
		t.Errorf("writer counted %d likes; loadgen acked %d", total, acked)
	}
	if got := conns.Load(); got != 4 {
		t.Errorf("server accepted %d connections; want 4", got)
	}
}

// TestOpenLoopSkipsAtMaxInflight: when maxInflight likes are unanswered, the likes falling due
// are skipped, not queued; the likes in flight when ctx ends still finish.
func TestOpenLoopSkipsAtMaxInflight(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(100 * time.Millisecond)
		answerJSON(w, 1, true)
	})
	l := New(srv.URL, []string{"a"}, "u", 8, 5*time.Second)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	l.Open(ctx, 1000, 2)
	acked, errs, skipped := l.Recorder().Totals()
	if errs != 0 || acked == 0 || acked > 6 || skipped == 0 {
		t.Fatalf("acked %d, errors %d (last %q), skipped %d; want at most 2 per 100 ms acked, none failed, the rest skipped",
			acked, errs, l.Recorder().LastError(), skipped)
	}
}

// TestConnsReused: a run keeps its connections for the next one; Close drops them.
func TestConnsReused(t *testing.T) {
	srv, conns := serve(t, func(w http.ResponseWriter, _ *http.Request) { answerJSON(w, 1, true) })
	l := New(srv.URL, []string{"a"}, "u", 3, 5*time.Second)
	defer l.Close()
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		l.Closed(ctx, 3)
		cancel()
	}
	if got := conns.Load(); got != 3 {
		t.Fatalf("server accepted %d connections over two runs; want 3", got)
	}
	l.Close()
	likeOnce(l)
	if got := conns.Load(); got != 4 {
		t.Fatalf("after Close the server accepted %d connections; want 4 (a new dial)", got)
	}
}

// TestWriterURL: the base URL's path prefixes the like's path; an unusable URL makes each like
// fail saying why.
func TestWriterURL(t *testing.T) {
	var path atomic.Value
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		path.Store(r.URL.Path + " " + r.Host + " " + r.Header.Get("X-User-ID"))
		answerJSON(w, 1, true)
	})
	l := New(srv.URL+"/api/", []string{"p 1"}, "run-u", 1, 5*time.Second)
	likeOnce(l)
	l.Close()
	if want := "/api/like/p 1 " + strings.TrimPrefix(srv.URL, "http://") + " run-u1"; path.Load() != want {
		t.Fatalf("server saw %q; want %q", path.Load(), want)
	}
	for _, tt := range []struct{ give, wantErr string }{
		{give: "https://127.0.0.1:1", wantErr: "only http:// is supported"},
		{give: "http://", wantErr: "has no host"},
		{give: "http://a b", wantErr: "writer URL"},
		{give: "http://127.0.0.1:1", wantErr: "dial writer"},
		{give: "http://no-such-host.invalid", wantErr: "resolve writer"},
	} {
		t.Run(tt.give, func(t *testing.T) {
			l := New(tt.give, []string{"a"}, "u", 1, time.Second)
			defer l.Close()
			likeOnce(l)
			if _, errs, _ := l.Recorder().Totals(); errs != 1 || !strings.Contains(l.Recorder().LastError(), tt.wantErr) {
				t.Fatalf("errors %d, last %q; want 1 containing %q", errs, l.Recorder().LastError(), tt.wantErr)
			}
		})
	}
}

// TestRequestsOnTheWire: what appendRequests writes is, byte for byte, the request the writer
// reads, and two of them in a row (pipelined) parse as two requests, each naming its fresh user:
// in X-User-ID, or with a session token for it and no X-User-ID.
func TestRequestsOnTheWire(t *testing.T) {
	l := New("http://127.0.0.1:8080", []string{"a", "b"}, "u", 1, time.Second)
	wire := l.appendRequests(nil, &conn{}, []job{{post: 0, seq: 35}, {post: 1, seq: 36}}, time.Now())
	want := "POST /like/a HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 0\r\nX-User-ID: uz\r\n\r\n" +
		"POST /like/b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 0\r\nX-User-ID: u10\r\n\r\n"
	if string(wire) != want {
		t.Fatalf("got %q; want %q", wire, want)
	}
	wantRequests(t, wire, "")

	l = New("http://127.0.0.1:8080", []string{"a", "b"}, "u", 1, time.Second, WithSessions(testKeys))
	wire = l.appendRequests(nil, &conn{}, []job{{post: 0, seq: 35}, {post: 1, seq: 36}}, time.Now())
	wantRequests(t, wire, "session")
}

// wantRequests parses wire as likes of a and b by users uz and u10, named as identity says.
func wantRequests(t *testing.T, wire []byte, identity string) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(wire))
	for i, post := range []string{"a", "b"} {
		req, err := http.ReadRequest(br)
		if err != nil || req.Method != http.MethodPost || req.URL.Path != "/like/"+post || req.ContentLength != 0 {
			t.Fatalf("request for %s: %v, %+v", post, err, req)
		}
		user, err := userOf(req)
		if want := []string{"uz", "u10"}[i]; err != nil || user != want {
			t.Errorf("like of %s by %q (%v); want %q", post, user, err, want)
		}
		if identity == "session" && req.Header.Get("X-User-ID") != "" {
			t.Errorf("like of %s with a session token also names X-User-ID", post)
		}
	}
}

// TestRequestsAllocateNothing: once the buffers have grown, a batch of likes is written without
// allocating, with either identity.
func TestRequestsAllocateNothing(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, identity []Option) {
		l := New("http://127.0.0.1:8080", []string{"a", "b"}, "u", 1, time.Second, identity...)
		c := &conn{}
		batch := []job{{post: 0, seq: 1 << 40}, {post: 1, seq: 1<<40 + 1}}
		now := time.Now()
		c.wbuf = l.appendRequests(c.wbuf[:0], c, batch, now)
		if n := testing.AllocsPerRun(1000, func() { c.wbuf = l.appendRequests(c.wbuf[:0], c, batch, now) }); n != 0 {
			t.Errorf("%v allocations per batch; want 0", n)
		}
	})
}

// TestPipelineConnectionClose: when the writer closes the connection after the first of several
// pipelined likes, that one is acknowledged and the others count as errors.
func TestPipelineConnectionClose(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		answerJSON(w, 1, true)
	})
	l := New(srv.URL, []string{"a"}, "u", 1, 5*time.Second, WithPipeline(4))
	defer l.Close()
	c := l.getConn()
	l.send(context.Background(), c, make([]job, 4))
	l.putConn(c)
	acked, errs, _ := l.Recorder().Totals()
	if acked != 1 || errs != 3 || !strings.Contains(l.Recorder().LastError(), "Connection: close") {
		t.Fatalf("acked %d, errors %d, last %q; want 1 acked and 3 errors naming Connection: close", acked, errs, l.Recorder().LastError())
	}
}

// TestOpenLoopFewConnsAtLowRate: at a rate one connection carries, the open loop keeps using the
// connection that was idle for the shortest time instead of cycling through all of them (each
// would sit idle long enough to be redialled).
func TestOpenLoopFewConnsAtLowRate(t *testing.T) {
	srv, conns := serve(t, func(w http.ResponseWriter, _ *http.Request) { answerJSON(w, 1, true) })
	l := New(srv.URL, []string{"a"}, "u", 64, 5*time.Second)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	l.Open(ctx, 200, 64)
	acked, errs, _ := l.Recorder().Totals()
	if acked < 10 || errs != 0 {
		t.Fatalf("acked %d, errors %d (last %q); want many acked and none failed", acked, errs, l.Recorder().LastError())
	}
	if got := conns.Load(); got > 8 {
		t.Fatalf("%d likes at 200/s used %d connections; want a few", acked, got)
	}
}

// TestOpenLoopPipelineBacklog: with every connection busy, due likes wait in the backlog and go
// out pipelined; each is answered once.
func TestOpenLoopPipelineBacklog(t *testing.T) { forEachIdentity(t, testOpenLoopPipelineBacklog) }

func testOpenLoopPipelineBacklog(t *testing.T, identity []Option) {
	cw := &countingWriter{counts: map[string]int64{}, users: map[string]bool{}}
	srv, conns := serve(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		cw.ServeHTTP(w, r)
	})
	l := New(srv.URL, []string{"a"}, "u", 2, 5*time.Second, append(identity, WithPipeline(8))...)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	l.Open(ctx, 2000, 64)
	acked, errs, skipped := l.Recorder().Totals()
	if acked < 50 || errs != 0 {
		t.Fatalf("acked %d, errors %d (last %q), skipped %d; want many acked and none failed", acked, errs, l.Recorder().LastError(), skipped)
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if cw.counts["a"] != acked {
		t.Errorf("writer counted %d likes; loadgen acked %d", cw.counts["a"], acked)
	}
	if got := conns.Load(); got != 2 {
		t.Errorf("server accepted %d connections; want 2", got)
	}
}

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/writer-svc/internal/likeapi"
)

func TestLikeAPI(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	wantLike(t, w.like(t, "42", "alice"), "42", 1, true)
	wantLike(t, w.like(t, "42", "alice"), "42", 1, false)
	wantLike(t, w.like(t, "42", "bob"), "42", 2, true)
	wantLike(t, w.do(t, http.MethodDelete, "/like/42", "X-User-ID: alice"), "42", 1, false)
	wantLike(t, w.do(t, http.MethodDelete, "/like/42", "X-User-ID: alice"), "42", 1, false)
	got := w.do(t, http.MethodGet, "/count/42")
	if got.Status != 200 || got.Body["post_id"] != "42" || got.Body["count"] != float64(1) {
		t.Errorf("GET /count/42: %d %s; want 200 count 1", got.Status, got.Raw)
	}
	if _, ok := got.Body["liked"]; ok {
		t.Errorf("GET /count/42: %s has a liked field", got.Raw)
	}
	got = w.do(t, http.MethodGet, "/count/never-liked")
	if got.Status != 200 || got.Body["count"] != float64(0) {
		t.Errorf("GET /count/never-liked: %d %s; want count 0", got.Status, got.Raw)
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q; want application/json", ct)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if got := w.do(t, http.MethodGet, path); got.Status != 200 {
			t.Errorf("%s: %d; want 200", path, got.Status)
		}
	}
}

// TestConcurrentUsersCountExactlyOnce: 200 users like one post at once and 50 of them again:
// the count ends at exactly 200, 200 replies say liked and carry the counts 1 to 200 once each
// (each request's own place in the order Redis applied them), and the updates published (one
// per batch of likes) rise to 200 with increasing versions.
func TestConcurrentUsersCountExactlyOnce(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	ps := w.RDB.Subscribe(context.Background(), keys.Channel("hot"))
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	const users, repeats = 200, 50
	var failed atomic.Int32
	var mu sync.Mutex
	likedCounts := make(map[int64]int)
	var wg sync.WaitGroup
	for i := range users + repeats {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, w.URL+"/like/hot", nil)
			req.Header.Set("X-User-ID", "user-"+itoa(i%users))
			resp, err := w.Client.Do(req)
			if err != nil || resp.StatusCode != 200 {
				failed.Add(1)
				return
			}
			defer resp.Body.Close()
			var body struct {
				Liked bool
				Count int64
			}
			if decodeJSON(resp, &body) == nil && body.Liked {
				mu.Lock()
				likedCounts[body.Count]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed.Load() != 0 || len(likedCounts) != users {
		t.Fatalf("%d failed, %d distinct liked counts; want 0 and %d", failed.Load(), len(likedCounts), users)
	}
	for c := int64(1); c <= users; c++ {
		if likedCounts[c] != 1 {
			t.Errorf("%d replies liked with count %d; want 1", likedCounts[c], c)
		}
	}
	if got := w.do(t, http.MethodGet, "/count/hot"); got.Body["count"] != float64(users) {
		t.Errorf("count %s; want %d", got.Raw, users)
	}
	if n := w.dedupKeys(t, "hot"); n != users {
		t.Errorf("%d dedup keys; want %d", n, users)
	}
	var last update.Update
	for messages := 0; last.Count < users; messages++ {
		select {
		case m := <-ps.Channel():
			u, err := update.Parse([]byte(m.Payload))
			if err != nil || u.PostID != "hot" || u.Count <= last.Count || u.TS <= last.TS {
				t.Fatalf("message %q (err %v) after %+v: want a higher count of post hot with a higher ts", m.Payload, err, last)
			}
			last = u
		case <-time.After(5 * time.Second):
			t.Fatalf("after %d messages the last count is %d; want %d", messages, last.Count, users)
		}
	}
}

// TestBadInputChangesNothing: every malformed request gets its 4xx (JSON where our code answers)
// and Redis stays empty.
func TestBadInputChangesNothing(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	tests := []struct {
		name    string
		method  string
		path    string
		headers []string
		want    int
	}{
		{"post id with colon", "POST", "/like/a:b", []string{"X-User-ID: u"}, 400},
		{"post id with braces", "POST", "/like/%7B42%7D", []string{"X-User-ID: u"}, 400},
		{"post id too long", "POST", "/like/" + strings.Repeat("p", 65), []string{"X-User-ID: u"}, 400},
		{"post id with dot", "DELETE", "/like/a.b", []string{"X-User-ID: u"}, 400},
		{"count of a bad post id", "GET", "/count/a$b", nil, 400},
		{"missing user", "POST", "/like/42", nil, 400},
		{"empty user", "POST", "/like/42", []string{"X-User-ID: "}, 400},
		{"user with space", "POST", "/like/42", []string{"X-User-ID: a b"}, 400},
		{"user with colon", "POST", "/like/42", []string{"X-User-ID: a:b"}, 400},
		{"user too long", "POST", "/like/42", []string{"X-User-ID: " + strings.Repeat("u", 129)}, 400},
		{"two users", "POST", "/like/42", []string{"X-User-ID: a", "X-User-ID: b"}, 400},
		{"unlike without user", "DELETE", "/like/42", nil, 400},
		{"no post id", "POST", "/like/", []string{"X-User-ID: u"}, 404},
		{"unknown path", "GET", "/nope", nil, 404},
		{"GET a like", "GET", "/like/42", []string{"X-User-ID: u"}, 405},
		{"PUT a like", "PUT", "/like/42", []string{"X-User-ID: u"}, 405},
		{"POST a count", "POST", "/count/42", []string{"X-User-ID: u"}, 405},
		{"huge header", "POST", "/like/42", []string{"X-User-ID: u", "X-Junk: " + strings.Repeat("j", 64<<10)}, 431},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.do(t, tt.method, tt.path, tt.headers...)
			if got.Status != tt.want {
				t.Fatalf("got %d %s; want %d", got.Status, got.Raw, tt.want)
			}
			if tt.want != 431 {
				if msg, _ := got.Body["error"].(string); msg == "" {
					t.Errorf("body %q; want a JSON error", got.Raw)
				}
			}
		})
	}
	if n := w.dataKeys(t); n != 0 {
		t.Errorf("Redis holds %d keys after bad requests; want 0", n)
	}
}

func TestCORS(t *testing.T) {
	const origin = "https://app.example"
	w := startWriter(t, nil, trustHeader, "--cors-origins", origin+",https://other.example")
	preflight := func(from string) reply {
		return w.do(t, http.MethodOptions, "/like/42", "Origin: "+from,
			"Access-Control-Request-Method: POST", "Access-Control-Request-Headers: x-user-id, authorization, content-type")
	}
	got := preflight(origin)
	h := strings.ToLower(got.Header.Get("Access-Control-Allow-Headers"))
	if got.Status != 200 || got.Header.Get("Access-Control-Allow-Origin") != origin ||
		got.Header.Get("Access-Control-Allow-Methods") != "POST" ||
		!strings.Contains(h, "x-user-id") || !strings.Contains(h, "authorization") || !strings.Contains(h, "content-type") {
		t.Errorf("preflight: %d %v; want 200 allowing %s, POST and the three headers", got.Status, got.Header, origin)
	}
	if got := preflight("https://evil.example"); got.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin allowed: %v", got.Header)
	}
	got = w.do(t, http.MethodPost, "/like/42", "Origin: "+origin, "X-User-ID: u")
	if got.Status != 200 || got.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(got.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("actual request: %d %v; want 200 with CORS headers exposing Retry-After", got.Status, got.Header)
	}

	plain := startWriter(t, nil, trustHeader)
	if got := plain.do(t, http.MethodOptions, "/like/42", "Origin: "+origin, "Access-Control-Request-Method: POST"); got.Header.Get("Access-Control-Allow-Origin") != "" || got.Status != 405 {
		t.Errorf("without CORS_ORIGINS: %d %v; want 405 and no CORS headers", got.Status, got.Header)
	}
}

func TestMetrics(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	w.like(t, "m", "a")
	w.like(t, "m", "a")
	w.do(t, http.MethodDelete, "/like/m", "X-User-ID: a")
	w.do(t, http.MethodPost, "/like/m") // 400
	got := w.do(t, http.MethodGet, "/metrics")
	for _, want := range []string{
		"likes_writer_likes_total 1",
		"likes_writer_unlikes_total 1",
		`likes_writer_duplicates_total{op="like"} 1`,
		"likes_writer_publishes_total 2",
		"likes_writer_rate_limited_total 0",
		"likes_writer_auth_failures_total 0",
		"likes_writer_redis_errors_total 0",
		`likes_writer_http_requests_total{code="400",method="POST",route="/like/{postID}"} 1`,
		"process_resident_memory_bytes",
		"go_goroutines",
	} {
		if !strings.Contains(got.Raw, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

type panicIdentity struct{}

func (panicIdentity) UserID(*http.Request) (string, error) { panic("identity exploded") }

// TestPanicRecovered: a panicking handler answers 500 JSON and the server keeps serving.
func TestPanicRecovered(t *testing.T) {
	reg := prometheus.NewRegistry()
	log := zaptest.NewLogger(t)
	h := likeapi.NewHandler(likeapi.Options{Identify: panicIdentity{}, Metrics: likeapi.NewMetrics(reg, "t"), Log: log, Timeout: time.Second})
	srv := httptest.NewServer(newRouter(routerDeps{log: log, registry: reg, ready: func(context.Context) error { return nil }, likes: h}))
	defer srv.Close()
	w := &testWriter{URL: srv.URL, Client: srv.Client()}
	got := w.do(t, http.MethodPost, "/like/42", "X-User-ID: u")
	if got.Status != 500 || got.Body["error"] == nil {
		t.Errorf("got %d %s; want 500 JSON", got.Status, got.Raw)
	}
	if got := w.do(t, http.MethodGet, "/healthz"); got.Status != 200 {
		t.Errorf("after a panic /healthz: %d; want 200", got.Status)
	}
}

// TestSlowHeadersCutOff: a client that never finishes its headers (slowloris) is disconnected
// after READ_HEADER_TIMEOUT instead of holding a connection forever.
func TestSlowHeadersCutOff(t *testing.T) {
	const headerTimeout = 300 * time.Millisecond
	w := startWriter(t, nil, trustHeader, "--read-header-timeout", headerTimeout.String())
	conn, err := net.Dial("tcp", strings.TrimPrefix(w.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /like/42 HTTP/1.1\r\nHost: writer\r\nX-User-ID: slow")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn) // returns when the server closes the connection
	if took := time.Since(start); err != nil || took > headerTimeout+2*time.Second {
		t.Errorf("server closed after %s (read error %v); want about %s", took, err, headerTimeout)
	}
	if n := w.dataKeys(t); n != 0 {
		t.Errorf("a request with unfinished headers wrote %d keys", n)
	}
}

package sseclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/likes/likes/pkg/sse"
)

// countServer answers every stream request like a fanout node behind net/http (chunked body): a
// retry hint, n count frames with a heartbeat, then it holds the stream until the client leaves.
// It sends each request's headers to seen.
func countServer(t *testing.T, n int, seen chan<- http.Header) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(frames(n))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func hostOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestDialRunReadsChunkedStream(t *testing.T) {
	seen := make(chan http.Header, 1)
	srv := countServer(t, 4, seen)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Dial(ctx, Request{Addr: hostOf(t, srv.URL), Path: "/sse/42", LastEventID: "7", Header: []string{"X-Test: yes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Head(ctx); err != nil {
		t.Fatalf("Head = %v; want nil for a 200", err)
	}
	h := <-seen
	if h.Get("Last-Event-ID") != "7" || h.Get("X-Test") != "yes" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("request headers %v; want Last-Event-ID 7, X-Test and Accept", h)
	}
	col := &collected{retry: -1}
	err = c.Run(ctx, func(e *sse.Event) {
		col.emit(e)
		if len(col.counts) == 4 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v after cancel; want context.Canceled", err)
	}
	checkCounts(t, col, 4, "chunked stream")
	if c.Comments() != 1 {
		t.Errorf("Comments = %d; want the one heartbeat", c.Comments())
	}
}

func TestHeadReportsStatusAndRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3")
		http.Error(w, `{"error":"full"}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, err := Dial(context.Background(), Request{Addr: hostOf(t, srv.URL), Path: "/sse/1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var se *StatusError
	if err := c.Head(context.Background()); !errors.As(err, &se) || se.Code != 503 || se.RetryAfter != 3*time.Second {
		t.Fatalf("Head = %v; want StatusError 503 with Retry-After 3s", err)
	}
}

// TestEventsReadWithTheHeadAreKept: a server that writes its head and first frames in one write
// (fanout-svc does) must not lose the frames to Head.
func TestEventsReadWithTheHeadAreKept(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	go func() { // exits after one write: the pipe's reader takes it whole
		_, _ = server.Write(append([]byte(plainHead), frames(3)...))
		_ = server.Close()
	}()
	c := New(client)
	var body []byte
	c.Tap(func(p []byte) { body = append(body, p...) })
	if err := c.Head(context.Background()); err != nil {
		t.Fatal(err)
	}
	col := &collected{retry: -1}
	if err := c.Run(context.Background(), col.emit); !errors.Is(err, io.EOF) {
		t.Errorf("Run = %v; want io.EOF when the server closes", err)
	}
	checkCounts(t, col, 3, "frames in the head's read")
	if string(body) != string(frames(3)) {
		t.Errorf("tapped body %q; want the frames after the head, byte for byte", body)
	}
}

func TestRunReturnsWhenClosedFromAnotherGoroutine(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	c := New(client)
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), func(*sse.Event) {}) }()
	_ = c.Close()
	if err := <-done; err == nil {
		t.Error("Run = nil after Close; want the read's error")
	}
}

func TestRequestBytes(t *testing.T) {
	got := string(Request{Addr: "127.0.0.1:1", Path: "/sse?posts=a,b", Host: "likes"}.appendTo(nil))
	want := "GET /sse?posts=a,b HTTP/1.1\r\nHost: likes\r\nAccept: text/event-stream\r\n\r\n"
	if got != want {
		t.Errorf("request %q; want %q", got, want)
	}
}

func TestURLRequest(t *testing.T) {
	tests := []struct {
		give string
		want Request
	}{
		{"http://127.0.0.1:8090/sse/42", Request{Addr: "127.0.0.1:8090", Path: "/sse/42", Host: "127.0.0.1:8090"}},
		{"http://likes/sse?posts=a,b", Request{Addr: "likes:80", Path: "/sse?posts=a,b", Host: "likes"}},
	}
	for _, tt := range tests {
		got, err := URLRequest(tt.give)
		if err != nil || got.Addr != tt.want.Addr || got.Path != tt.want.Path || got.Host != tt.want.Host {
			t.Errorf("URLRequest(%q) = %+v, %v; want %+v", tt.give, got, err, tt.want)
		}
	}
	for _, bad := range []string{"https://x/sse/1", "/sse/1", "http://%zz"} {
		if _, err := URLRequest(bad); err == nil {
			t.Errorf("URLRequest(%q) = nil error; want one", bad)
		}
	}
}

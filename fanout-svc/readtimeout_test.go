package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// TestSlowBodyIsClosedWithinReadTimeout: a request that declares a body and never sends it (here
// to /healthz, whose handler reads none: net/http waits for the body before it answers) is
// closed by the node within READ_TIMEOUT, not held open for as long as the client likes.
func TestSlowBodyIsClosedWithinReadTimeout(t *testing.T) {
	rs := redistest.Start(t)
	addr := strings.TrimPrefix(startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL, "READ_TIMEOUT": "1s"}), "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(start.Add(5 * time.Second))
	_, err = io.Copy(io.Discard, c) // whatever the node answers, until it closes
	if took := time.Since(start); err != nil || took > 3*time.Second {
		t.Errorf("connection with a body never sent ended after %v (%v); want closed by the node within READ_TIMEOUT (1s)", took.Round(time.Millisecond), err)
	}
}

// TestStreamThroughNetHTTPOutlivesReadTimeout: a stream that net/http serves (the second
// request of a keep-alive connection, which the fast path leaves to it) keeps flowing long after
// READ_TIMEOUT: the stream's connection leaves net/http by Hijack, which clears the deadline
// ReadTimeout set on it, and the hand-over to the hub clears it again.
func TestStreamThroughNetHTTPOutlivesReadTimeout(t *testing.T) {
	rs := redistest.Start(t)
	addr := strings.TrimPrefix(startNodeEnv(t, map[string]string{
		"REDIS_URL": rs.URL, "READ_TIMEOUT": "500ms", "HEARTBEAT_INTERVAL": "200ms",
	}), "http://")
	resp, br, _ := exchange(t, addr, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"+streamRequest("/sse/rt"))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	stream, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	firstData(t, stream)
	// Read on for four times READ_TIMEOUT: heartbeats must go on arriving after it.
	sc := bufio.NewScanner(stream.Body)
	var last time.Duration
	for last < 2*time.Second && sc.Scan() {
		if strings.HasPrefix(sc.Text(), ":") {
			last = time.Since(start)
		}
	}
	if last < 2*time.Second {
		t.Errorf("stream through net/http: last heartbeat %v after its request (%v); want heartbeats past 2s, READ_TIMEOUT is 500ms", last.Round(time.Millisecond), sc.Err())
	}
}

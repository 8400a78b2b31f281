package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// These tests run the node as run builds it, the fast accept loop in front of net/http, and speak
// raw HTTP/1.1 to it where the bytes on the wire matter.

// exchange sends raw on a new connection to addr and reads the response (its body unread).
func exchange(t *testing.T, addr, raw string) (*http.Response, *bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("response to %q: %v", strings.SplitN(raw, "\r\n", 2)[0], err)
	}
	return resp, br, c
}

// viaRouter sends raw as the second request of a keep-alive connection, which the fast path
// leaves to net/http whole after its first request (/healthz): the routed handler answers it.
func viaRouter(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	resp, br, _ := exchange(t, addr, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"+raw)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstData reads a stream's lines until its first data line.
func firstData(t *testing.T, resp *http.Response) string {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %q; want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") {
			return sc.Text()
		}
	}
	t.Fatalf("stream ended before its first event: %v", sc.Err())
	return ""
}

func streamRequest(target string, extra ...string) string {
	return "GET " + target + " HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n" + strings.Join(extra, "") + "\r\n"
}

// sameAnswer fails unless the fast path's and the router's answers agree in status, the headers
// a client reads and the body.
func sameAnswer(t *testing.T, what string, fast, routed *http.Response) {
	t.Helper()
	fb, rb := body(t, fast), body(t, routed)
	if fast.StatusCode != routed.StatusCode || fb != rb {
		t.Errorf("%s: fast path %d %q, router %d %q", what, fast.StatusCode, fb, routed.StatusCode, rb)
	}
	for _, h := range []string{"Content-Type", "Cache-Control", "Retry-After"} {
		if fast.Header.Get(h) != routed.Header.Get(h) {
			t.Errorf("%s: %s %q from the fast path, %q from the router", what, h, fast.Header.Get(h), routed.Header.Get(h))
		}
	}
}

func TestFastPathServesStreamsAndCountsThem(t *testing.T) {
	rs := redistest.Start(t)
	base := startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL})
	addr := strings.TrimPrefix(base, "http://")
	resp, _, _ := exchange(t, addr, streamRequest("/sse/fp1"))
	if d := firstData(t, resp); !strings.Contains(d, `"fp1"`) {
		t.Errorf("first event %q; want fp1's state", d)
	}
	resp, _, _ = exchange(t, addr, streamRequest("/sse?posts=fp1,fp2"))
	firstData(t, resp)
	for _, m := range []string{
		`likes_fanout_http_requests_total{code="200",method="GET",route="/sse/{postID}"}`,
		`likes_fanout_http_requests_total{code="200",method="GET",route="/sse"}`,
	} {
		awaitMetric(t, base, m, 1)
	}
}

// awaitMetric waits until the node's metric reads want. The fast path counts a stream after
// its handler has written the answer, so a client can read the answer before the count moves.
func awaitMetric(t *testing.T, base, name string, want float64) {
	t.Helper()
	poll.Check(t, 5*time.Second, func() error {
		n, err := clienttest.ScrapeMetric(base, name)
		if err != nil {
			return err
		}
		if n != want {
			return fmt.Errorf("%s = %v; want %v", name, n, want)
		}
		return nil
	})
}

func TestFastPathBadStreamsGetTheRoutersError(t *testing.T) {
	rs := redistest.Start(t)
	addr := strings.TrimPrefix(startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL}), "http://")
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprint("p", i)
	}
	for _, target := range []string{"/sse/bad!id", "/sse?posts=", "/sse?posts=a,,b", "/sse?posts=" + strings.Join(many, ","), "/sse/" + strings.Repeat("x", 65)} {
		fast, _, _ := exchange(t, addr, streamRequest(target))
		if fast.StatusCode != http.StatusBadRequest || fast.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q; want 400 JSON", target, fast.StatusCode, fast.Header.Get("Content-Type"))
		}
		sameAnswer(t, target, fast, viaRouter(t, addr, streamRequest(target)))
	}
}

// TestFastPathRefusalsMatchTheRouters: a full node's 503, written raw by the fast path, reads as
// the routed handler's.
func TestFastPathRefusalsMatchTheRouters(t *testing.T) {
	rs := redistest.Start(t)
	base := startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL, "MAX_CONNS": "1"})
	addr := strings.TrimPrefix(base, "http://")
	held, _, _ := exchange(t, addr, streamRequest("/sse/fp1"))
	firstData(t, held)
	fast, _, _ := exchange(t, addr, streamRequest("/sse/fp1"))
	if fast.StatusCode != http.StatusServiceUnavailable || fast.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream of a full node: %d, Retry-After %q; want 503 with one", fast.StatusCode, fast.Header.Get("Retry-After"))
	}
	sameAnswer(t, "full node", fast, viaRouter(t, addr, streamRequest("/sse/fp1")))
	m := `likes_fanout_http_requests_total{code="503",method="GET",route="/sse/{postID}"}`
	awaitMetric(t, base, m, 2) // one each way
	awaitMetric(t, base, "likes_fanout_refused_total", 2)
}

// TestFastPathLeavesOtherRequestsToNetHTTP: the page, the probes, /metrics, other methods and
// near-miss paths reach net/http with their bytes intact, on connections that stay alive.
func TestFastPathLeavesOtherRequestsToNetHTTP(t *testing.T) {
	rs := redistest.Start(t)
	base := startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	reused := 0
	for i, tt := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", 200}, {"GET", "/metrics", 200}, {"GET", "/", 200}, {"GET", "/readyz", 200},
		{"POST", "/sse/fp1", 405}, {"GET", "/ssex", 404}, {"GET", "/healthz", 200},
	} {
		req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) {
				if ci.Reused {
					reused++
				}
			}}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("request %d, %s %s: %d; want %d", i, tt.method, tt.path, resp.StatusCode, tt.want)
		}
	}
	if reused == 0 {
		t.Error("no request reused a keep-alive connection")
	}
}

// TestFastPathStalledHeadIsClosedWithoutBlocking: a client that sends half a head and stalls is
// closed after the header timeout, and another client connects meanwhile.
func TestFastPathStalledHeadIsClosedWithoutBlocking(t *testing.T) {
	rs := redistest.Start(t)
	addr := strings.TrimPrefix(startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL, "READ_HEADER_TIMEOUT": "300ms"}), "http://")
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := io.WriteString(stalled, "GET /sse/fp1 HTTP/1.1\r\nHost: t\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, _, _ := exchange(t, addr, streamRequest("/sse/fp1"))
	firstData(t, resp)
	_ = stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := stalled.Read(make([]byte, 1))
	var ne net.Error
	if n != 0 || err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("stalled client read %d bytes, %v; want the node to have closed it", n, err)
	}
}

// TestFastPathLongHeadsGoToNetHTTP: a head past the loop's cap is net/http's, which serves it up to
// MaxHeaderBytes (here a stream it hijacks from the replayed connection) and answers 431 beyond.
func TestFastPathLongHeadsGoToNetHTTP(t *testing.T) {
	rs := redistest.Start(t)
	addr := strings.TrimPrefix(startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL}), "http://")
	resp, _, _ := exchange(t, addr, streamRequest("/sse/fp1", "X-Pad: "+strings.Repeat("p", 10<<10)+"\r\n"))
	firstData(t, resp)
	resp, _, _ = exchange(t, addr, streamRequest("/sse/fp1", "X-Pad: "+strings.Repeat("p", 40<<10)+"\r\n"))
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("head of 40 KiB: %d; want 431", resp.StatusCode)
	}
}

// TestLoopPanicsAreCountedAndLoggedWithoutTheBytes: a recovered loop panic is counted and logged
// with the head's length and hash, never the head itself (another user's headers).
func TestLoopPanicsAreCountedAndLoggedWithoutTheBytes(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	p := &loopPanics{log: zap.New(core), keepInTests: true}
	head := []byte("GET /sse/1 HTTP/1.1\r\nHost: a\r\nCookie: secret\r\n\r\n")
	p.recovered("boom", head)
	if p.n.Load() != 1 {
		t.Fatalf("counted %d panics; want 1", p.n.Load())
	}
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("%d log entries; want 1", len(entries))
	}
	fields := entries[0].ContextMap()
	if fields["head_bytes"] != int64(len(head)) || len(fmt.Sprint(fields["head_sha256"])) != 16 {
		t.Errorf("logged %v; want the head's length and a 16-digit hash", fields)
	}
	for k, v := range fields {
		if k != "stack" && strings.Contains(fmt.Sprint(v), "secret") {
			t.Errorf("field %s holds the head's bytes: %v", k, v)
		}
	}
}

package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// rawStream is a stream request sent over a raw connection from a chosen loopback source address.
type rawStream struct {
	conn   net.Conn
	status int
	header http.Header
	body   string // the JSON error of a refused request
}

// openRawStream sends GET path to addr from source (a 127.0.0.0/8 address, "" for any) with extra
// header lines and reads the response head. A 200 stream stays open until the test ends.
func openRawStream(t testing.TB, addr, source, path string, headers ...string) rawStream {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, source, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", path, source, err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	s := rawStream{conn: conn, status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		s.body = string(b)
		_ = conn.Close()
	}
	return s
}

// TestSlowlorisIsCutOff opens 1,000 connections that send their request head one byte a second.
// READ_HEADER_TIMEOUT (1 s here) must close each of them within a few seconds, whatever it has
// sent, and meanwhile the node keeps serving viewers and /healthz.
func TestSlowlorisIsCutOff(t *testing.T) {
	rds := redistest.Start(t)
	node := StartFanout(t, rds.URL, "READ_HEADER_TIMEOUT=1s")
	const slow = 1000
	conns := make([]net.Conn, 0, slow)
	for range slow {
		c, err := net.DialTimeout("tcp", node.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		conns = append(conns, c)
	}
	// One goroutine trickles a byte a second into every connection until all are closed.
	head := "GET /sse/slow HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)
	closedAt := make([]time.Duration, slow)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() { // exits when the server closed the connection or after 10 s
			defer wg.Done()
			closedAt[i] = trickleUntilClosed(c, head, 10*time.Second)
		}()
	}

	// While they trickle, a viewer connects and gets its snapshot, and /healthz answers.
	v := Watch(t, node.URL+"/sse/slow")
	WaitCount(t, 5*time.Second, "slow", 0, v)
	start := time.Now()
	if status, _ := doRequest(t, http.MethodGet, node.URL+"/healthz", ""); status != http.StatusOK {
		t.Errorf("/healthz during slowloris: %d; want 200", status)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("/healthz during slowloris took %v; want under 1s", took)
	}
	wg.Wait()
	var worst time.Duration
	for i, d := range closedAt {
		if d < 0 {
			t.Fatalf("slowloris connection %d still open after 10s", i)
		}
		worst = max(worst, d)
	}
	t.Logf("all %d slowloris connections closed by the node, the last %v after opening (READ_HEADER_TIMEOUT=1s)", slow, worst)
	if worst > 4*time.Second {
		t.Errorf("slowest close %v; want within 4s of a 1s READ_HEADER_TIMEOUT", worst)
	}
	if !v.Connected() {
		t.Error("the real viewer lost its stream")
	}
}

// trickleUntilClosed writes head one byte a second (the read that waits for the server's answer
// paces it) and reports when the peer closed the connection, or -1 if it had not after limit.
func trickleUntilClosed(c net.Conn, head string, limit time.Duration) time.Duration {
	start := time.Now()
	buf := make([]byte, 64)
	for i := 0; time.Since(start) < limit; i++ {
		if _, err := c.Write([]byte{head[i%len(head)]}); err != nil {
			return time.Since(start)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, err := c.Read(buf)
		var ne net.Error
		if err != nil && (!errors.As(err, &ne) || !ne.Timeout()) {
			return time.Since(start) // EOF or reset: the server closed it
		}
	}
	return -1
}

// TestOversizedAndAbsurdRequests sends request heads and queries no client should send: oversized
// headers get 431, absurd queries 400 with a JSON error, a garbled Last-Event-ID is ignored (a
// full snapshot, never an error), and the node stays healthy.
func TestOversizedAndAbsurdRequests(t *testing.T) {
	rds := redistest.Start(t)
	node := StartFanout(t, rds.URL)
	tooMany := make([]string, 65)
	for i := range tooMany {
		tooMany[i] = "p" + strings.Repeat("x", i%10)
	}
	tests := []struct {
		name    string
		path    string
		headers []string
		want    int
	}{
		{"64 KiB header", "/sse/1", []string{"X-Junk: " + strings.Repeat("j", 64<<10)}, http.StatusRequestHeaderFieldsTooLarge},
		{"many headers", "/sse/1", repeatHeader("X-Many: 0123456789012345678901234567890123456789", 1000), http.StatusRequestHeaderFieldsTooLarge},
		{"20 KiB request line", "/sse?posts=" + strings.Repeat("a", 20<<10), nil, http.StatusRequestHeaderFieldsTooLarge},
		{"9 KiB query", "/sse?posts=a&" + strings.Repeat("z=1&", 2300), nil, http.StatusBadRequest},
		{"65 posts", "/sse?posts=" + strings.Join(tooMany, ","), nil, http.StatusBadRequest},
		{"bad escape", "/sse?posts=%zz", nil, http.StatusBadRequest},
		{"NUL in id", "/sse?posts=a%00b", nil, http.StatusBadRequest},
		{"non-ASCII id", "/sse?posts=%EF%BC%A1", nil, http.StatusBadRequest},
		{"empty ids", "/sse?posts=,,,", nil, http.StatusBadRequest},
		{"path traversal", "/sse/..%2F..%2Fetc", nil, http.StatusBadRequest},
		{"garbled Last-Event-ID", "/sse/1", []string{"Last-Event-ID: 99999999999999999999999999"}, http.StatusOK},
		{"negative Last-Event-ID", "/sse?posts=1,2&lastEventId=-5", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openRawStream(t, node.Addr, "", tt.path, tt.headers...)
			if s.status != tt.want {
				t.Fatalf("got %d %q; want %d", s.status, s.body, tt.want)
			}
			if tt.want == http.StatusBadRequest {
				var body struct{ Error string }
				if err := json.Unmarshal([]byte(s.body), &body); err != nil || body.Error == "" {
					t.Errorf("body %q; want a JSON error", s.body)
				}
			}
			if tt.want == http.StatusOK {
				_ = s.conn.Close()
			}
		})
	}
	if status, _ := doRequest(t, http.MethodGet, node.URL+"/healthz", ""); status != http.StatusOK {
		t.Errorf("/healthz after abuse: %d; want 200", status)
	}
}

func repeatHeader(h string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = h
	}
	return out
}

// TestViewersPerAddress limits streams per client address (MAX_VIEWERS_PER_IP=3) behind haproxy,
// whose X-Forwarded-For the node believes because it comes from TRUSTED_PROXIES; a client's own
// X-Forwarded-For is believed from nobody else.
func TestViewersPerAddress(t *testing.T) {
	rds := redistest.Start(t)
	// haproxy keeps forwarding to a client that hung up until a write to it fails, so the node
	// learns of the departure at its next heartbeat: 1 s here.
	node := StartFanout(t, rds.URL, "MAX_VIEWERS_PER_IP=3", "TRUSTED_PROXIES=127.0.0.1", "HEARTBEAT_INTERVAL=1s")
	lb := StartHaproxy(t, node.Addr)

	// Through the balancer: the address is the client's, from haproxy's X-Forwarded-For.
	first := openLimited(t, lb.Addr, "127.0.0.2", 200)
	openLimited(t, lb.Addr, "127.0.0.2", 200)
	openLimited(t, lb.Addr, "127.0.0.2", 200)
	openLimited(t, lb.Addr, "127.0.0.2", http.StatusTooManyRequests)
	openLimited(t, lb.Addr, "127.0.0.3", 200)

	// Directly from an address that is not a trusted proxy, X-Forwarded-For is ignored.
	openLimited(t, node.Addr, "127.0.0.4", 200, "X-Forwarded-For: 203.0.113.1")
	openLimited(t, node.Addr, "127.0.0.4", 200, "X-Forwarded-For: 203.0.113.2")
	openLimited(t, node.Addr, "127.0.0.4", 200, "X-Forwarded-For: 203.0.113.3")
	openLimited(t, node.Addr, "127.0.0.4", http.StatusTooManyRequests, "X-Forwarded-For: 203.0.113.4")

	// A viewer that leaves frees its slot (by the node's next heartbeat).
	_ = first.conn.Close()
	poll.Until(t, 5*time.Second, "the closed stream's slot to be free again", func() bool {
		return openRawStream(t, lb.Addr, "127.0.0.2", perAddressPath).status == http.StatusOK
	})
	if got := node.Metric(t, "likes_fanout_refused_total"); got < 2 {
		t.Errorf("refused streams: got %v; want at least 2", got)
	}
}

// TestForgedForwardedForBehindHaproxy: a client behind haproxy that sends its own
// X-Forwarded-For must still be counted under its real address. haproxy's `option forwardfor`
// adds its own X-Forwarded-For header line after the client's (it does not append to the
// client's line), and the two lines are one list (RFC 9110 5.3).
func TestForgedForwardedForBehindHaproxy(t *testing.T) {
	rds := redistest.Start(t)
	node := StartFanout(t, rds.URL, "MAX_VIEWERS_PER_IP=3", "TRUSTED_PROXIES=127.0.0.1")
	lb := StartHaproxy(t, node.Addr)
	for i := range 3 {
		openLimited(t, lb.Addr, "127.0.0.2", 200, "X-Forwarded-For: 198.51.100."+strconv.Itoa(i))
	}
	openLimited(t, lb.Addr, "127.0.0.2", http.StatusTooManyRequests, "X-Forwarded-For: 198.51.100.99")
}

const perAddressPath = "/sse/perip"

// openLimited opens a stream of perAddressPath from source via addr and checks the status; a 429
// must carry Retry-After and a JSON error.
func openLimited(t *testing.T, addr, source string, want int, headers ...string) rawStream {
	t.Helper()
	s := openRawStream(t, addr, source, perAddressPath, headers...)
	if s.status != want {
		t.Fatalf("stream from %s via %s %v: got %d %q; want %d", source, addr, headers, s.status, s.body, want)
	}
	if want == http.StatusTooManyRequests {
		var body struct{ Error string }
		if s.header.Get("Retry-After") == "" || json.Unmarshal([]byte(s.body), &body) != nil || body.Error == "" {
			t.Errorf("429 without Retry-After or JSON error: %v %q", s.header, s.body)
		}
	}
	return s
}

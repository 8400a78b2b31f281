package fastaccept

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/testkit/poll"
)

// startLoop serves an echo server behind the loop: the handler takes GET /fast heads and answers
// "fast", takes GET /slow heads only where it may block and answers "slow", and net/http answers
// everything else with the method, path and body it read. accepted counts the connections
// net/http accepted.
func startLoop(t *testing.T, cfg Config) (l *Listener, accepted *atomic.Int64) {
	t.Helper()
	l = startListener(t, cfg, func(c net.Conn, h *Head, mayBlock bool) Outcome {
		var answer string
		switch string(h.Path()) {
		case "/fast":
			answer = "fast"
		case "/slow":
			if !mayBlock {
				return Blocking
			}
			answer = "slow"
		default:
			return Declined
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\n"+answer)
		_ = c.Close()
		return Taken
	})
	accepted = new(atomic.Int64)
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(b))
	}), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted.Add(1)
		}
	}}
	done := make(chan struct{})
	go func() { // exits when the cleanup closes the server
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return l, accepted
}

// startListener listens on loopback with handler and runs one event loop on the listener, as a
// server's own loops would (the node's are the hub's loops), until the test ends.
func startListener(t *testing.T, cfg Config, handler Handler) *Listener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen(inner, cfg, handler)
	if err != nil {
		t.Fatal(err)
	}
	p, err := epoll.New()
	if err != nil {
		t.Fatal(err)
	}
	in, err := l.Attach(p, p.Wake, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // exits when the listener closes
		defer close(done)
		defer p.Close()
		defer in.Detach()
		for {
			for _, ev := range p.Wait(10) {
				if p.IsWake(&ev) {
					p.DrainWake()
					continue
				}
				in.Event(int(ev.Fd))
			}
			if in.Closing() {
				return
			}
			in.Tick()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		l.Wait()
	})
	return l
}

func roundTrip(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestLoopTakesItsHeadsAndReplaysTheRest(t *testing.T) {
	l, _ := startLoop(t, Config{Prefix: "GET /"})
	addr := l.Addr().String()
	for raw, want := range map[string]string{
		"GET /fast HTTP/1.1\r\nHost: a\r\n\r\n":                                                "fast",
		"GET /slow HTTP/1.1\r\nHost: a\r\n\r\n":                                                "slow",        // served on a goroutine
		"GET /fastx HTTP/1.1\r\nHost: a\r\n\r\n":                                               "GET /fastx ", // declined by the handler
		"GET /other HTTP/1.1\r\nHost: a\r\n\r\n":                                               "GET /other ", // declined
		"PUT /fast HTTP/1.1\r\nHost: a\r\n\r\n":                                                "PUT /fast ",  // prefix differs
		"POST /fast HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello":                     "POST /fast hello",
		"GET /fast HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi":                         "GET /fast hi", // a body
		"GET /fast HTTP/1.1\r\nHost: a\r\nX-Pad: " + strings.Repeat("p", MaxHead) + "\r\n\r\n": "GET /fast ",
	} {
		if got := roundTrip(t, addr, raw); got != want {
			t.Errorf("%.40q: got %q; want %q", raw, got, want)
		}
	}
}

func TestLoopClosesStalledHeadsWithoutBlockingOthers(t *testing.T) {
	l, _ := startLoop(t, Config{Prefix: "GET /f", HeadTimeout: 200 * time.Millisecond})
	stalled, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	_, _ = io.WriteString(stalled, "GET /fast HTTP/1.1\r\n")
	if got := roundTrip(t, l.Addr().String(), "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n"); got != "fast" {
		t.Fatalf("second client got %q", got)
	}
	_ = stalled.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = stalled.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("stalled head: read %v; want it closed by the loop", err)
	}
}

// TestLoopBoundsPendingHeads: past MaxPending heads still arriving, a connection whose head is
// not whole goes to net/http at once.
func TestLoopBoundsPendingHeads(t *testing.T) {
	l, accepted := startLoop(t, Config{Prefix: "GET /f", MaxPending: 1, HeadTimeout: 5 * time.Second})
	stalled := dialSending(t, l, "GET /fa")
	poll.Until(t, 5*time.Second, "the stalled head to be the one pending", func() bool { return l.Pending() == 1 })
	second := dialSending(t, l, "GET /fast HTTP/1.1\r\n")
	poll.Until(t, 5*time.Second, "net/http to get the second connection", func() bool { return accepted.Load() == 1 })
	if _, err := io.WriteString(second, "Host: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "GET /fast " {
		t.Errorf("got %q; want net/http's answer while the one pending head is taken", b)
	}
	_ = stalled
}

// dialSending connects to l and sends raw, and closes the connection when the test ends.
func dialSending(t *testing.T, l *Listener, raw string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCloseEndsPendingHeads: Close stops the loop's accepting and closes the heads in flight.
func TestCloseEndsPendingHeads(t *testing.T) {
	l := startListener(t, Config{Prefix: "GET /f", HeadTimeout: time.Minute}, func(net.Conn, *Head, bool) Outcome { return Declined })
	c := dialSending(t, l, "GET /fa")
	poll.Until(t, 5*time.Second, "the head to be pending", func() bool { return l.Pending() == 1 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Wait()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v; want net.ErrClosed", err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("pending client read %d, %v; want its connection closed", n, err)
	}
	if l.Pending() != 0 {
		t.Errorf("%d heads pending after Close", l.Pending())
	}
}

// TestHalfClosedRequestIsAnswered: a client that sends its request and closes its side at once
// gets net/http's answer, as it would without the loop in front.
func TestHalfClosedRequestIsAnswered(t *testing.T) {
	l, _ := startLoop(t, Config{Prefix: "GET /"})
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// A path the handler declines: whether the loop reads the head before or with the half-close,
	// the answer is net/http's.
	if _, err := io.WriteString(c, "GET /other HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a half-closed request: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "GET /other " {
		t.Errorf("got %q; want net/http's answer", b)
	}
}

// TestLoopSurvivesAPanic: a panic while serving one head (on the loop, or on a Blocking
// handler's goroutine) closes that connection and is reported with the head; the loop goes on
// serving the next.
func TestLoopSurvivesAPanic(t *testing.T) {
	var heads []string
	var mu sync.Mutex
	cfg := Config{Prefix: "GET /", OnPanic: func(p any, head []byte) {
		mu.Lock()
		heads = append(heads, fmt.Sprint(p)+" "+string(head))
		mu.Unlock()
	}}
	l := startListener(t, cfg, func(c net.Conn, h *Head, mayBlock bool) Outcome {
		switch string(h.Path()) {
		case "/boom":
			panic("boom")
		case "/slowboom":
			if !mayBlock {
				return Blocking
			}
			panic("slowboom")
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfast")
		_ = c.Close()
		return Taken
	})
	for _, path := range []string{"/boom", "/slowboom"} {
		c := dialSending(t, l, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n")
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("%s: read %d, %v; want the connection closed", path, n, err)
		}
		if got := roundTrip(t, l.Addr().String(), "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n"); got != "fast" {
			t.Fatalf("after %s: got %q; want the loop still serving", path, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"boom GET /boom HTTP/1.1\r\nHost: a\r\n\r\n", "slowboom GET /slowboom HTTP/1.1\r\nHost: a\r\n\r\n"}
	if !slices.Equal(heads, want) {
		t.Errorf("reported %q; want %q", heads, want)
	}
}

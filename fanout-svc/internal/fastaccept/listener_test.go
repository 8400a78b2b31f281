package fastaccept

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/poll"
)

// startLoop serves l with an echo server behind the loop: the handler takes GET /fast heads and
// answers "fast"; net/http answers everything else with the method, path and body it read.
func startLoop(t *testing.T, cfg Config) *Listener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(inner, cfg, func(c net.Conn, h *Head) bool {
		if string(h.Path()) != "/fast" {
			return false
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfast")
		_ = c.Close()
		return true
	})
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(b))
	})}
	done := make(chan struct{})
	go func() { // exits when the cleanup closes the server
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
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
	l := startLoop(t, Config{Prefix: "GET /f"})
	addr := l.Addr().String()
	for raw, want := range map[string]string{
		"GET /fast HTTP/1.1\r\nHost: a\r\n\r\n":                                                "fast",
		"GET /fastx HTTP/1.1\r\nHost: a\r\n\r\n":                                               "GET /fastx ", // declined by the handler
		"GET /other HTTP/1.1\r\nHost: a\r\n\r\n":                                               "GET /other ", // prefix differs
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
	l := startLoop(t, Config{Prefix: "GET /f", HeadTimeout: 200 * time.Millisecond})
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

// TestLoopBoundsPendingHeads: past MaxPending a connection goes to net/http at once.
func TestLoopBoundsPendingHeads(t *testing.T) {
	l := startLoop(t, Config{Prefix: "GET /f", MaxPending: 1, HeadTimeout: 5 * time.Second})
	stalled, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	_, _ = io.WriteString(stalled, "GET /fa")
	poll.Until(t, 5*time.Second, "the stalled head to take the pending slot", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.pending) == 1
	})
	if got := roundTrip(t, l.Addr().String(), "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n"); got != "GET /fast " {
		t.Errorf("got %q; want net/http's answer while the one pending slot is taken", got)
	}
}

// TestCloseEndsPendingHeads: Close stops the loop and the goroutines of heads in flight.
func TestCloseEndsPendingHeads(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(inner, Config{Prefix: "GET /f", HeadTimeout: time.Minute}, func(net.Conn, *Head) bool { return false })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /fa")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Wait() // returns: the stalled head's goroutine ended
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v; want net.ErrClosed", err)
	}
}

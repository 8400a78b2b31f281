package fastaccept

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

const busy = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy"

// TestNetHTTPConnectionsAreBounded: net/http holds at most MaxNetHTTP connections; one more is
// answered Busy and closed at once, without reaching net/http. A connection net/http closes,
// or one a handler hijacks (a stream, the hub's from then on), gives its place back.
func TestNetHTTPConnectionsAreBounded(t *testing.T) {
	var l *Listener
	release := make(chan struct{})
	l = startListener(t, Config{Prefix: "GET /fast", MaxNetHTTP: 2, Busy: []byte(busy)},
		func(net.Conn, *Head, bool) Outcome { return Declined })
	hijacked := make(chan net.Conn, 1)
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hold":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/hijack":
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				hijacked <- c
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			l.Released()
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
	addr := l.Addr().String()

	held := make([]net.Conn, 2)
	for i := range held {
		held[i] = send(t, addr, "GET /hold HTTP/1.1\r\nHost: t\r\n\r\n")
	}
	poll.Until(t, 5*time.Second, "net/http to hold two connections", func() bool { return l.NetHTTP() == 2 })
	if got := roundTrip(t, addr, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n"); got != "busy" {
		t.Fatalf("a third connection for net/http got %q; want busy", got)
	}
	if n := l.NetHTTP(); n != 2 {
		t.Errorf("net/http holds %d connections after a refusal; want 2", n)
	}

	close(release) // the held requests are answered; their clients close
	for _, c := range held {
		c.Close()
	}
	poll.Until(t, 5*time.Second, "net/http to let the connections go", func() bool { return l.NetHTTP() == 0 })
	if got := roundTrip(t, addr, "GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"); got != "ok" {
		t.Errorf("after the connections closed: %q; want ok", got)
	}

	// A hijacked connection is no longer net/http's: it leaves the count.
	keep := send(t, addr, "GET /hijack HTTP/1.1\r\nHost: t\r\n\r\n")
	defer keep.Close()
	c := <-hijacked
	defer c.Close()
	poll.Until(t, 5*time.Second, "the hijacked connection to leave the count", func() bool { return l.NetHTTP() == 0 })
}

// send writes raw on a new connection to addr and returns the connection, its answer unread.
func send(t *testing.T, addr, raw string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	return c
}

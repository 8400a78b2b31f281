// Package hostiletest is the hostile-client suite: what someone who wants a server down sends to
// its listening port, on real sockets, each attack with what a hardened HTTP/1.1 server must do
// about it (answer 4xx, or close, within its own timeouts). fanout-svc and writer-svc run it
// against a real node; after every attack the suite checks that the node answers /healthz, that
// the process's heap is back within a bound, and whatever the caller's After checks (a viewer
// connected before the suite still gets every update; a like is still acknowledged).
//
// The connection-level attacks and the costly ones (thousands of idle connections, a list of
// 10,000 ids) run on one path; the request-level ones (routeAttacks: mangled request lines and
// targets, hostile path parameters, odd, repeated and huge query parameters, wrong and made-up
// methods, bodies that never come, trickle, never end or are 100 MB) run on every route of the
// service's router, so that a new route is attacked as soon as it exists.
//
// It lives in the module's internal/ rather than pkg/: it is a test kit that only the services'
// tests import.
package hostiletest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

// Target is a server under attack.
type Target struct {
	// Addr is the server's host:port.
	Addr string
	// HeadTimeout is the server's ReadHeaderTimeout: a head not whole by then must be closed.
	HeadTimeout time.Duration
	// Path is a GET path the server serves (a stream for fanout, a read for the writer); the
	// attacks mangle requests for it.
	Path string
	// ListPath is a GET path that takes a list query (e.g. "/sse?posts="); the attack appends a
	// list of 10,000 ids to it.
	ListPath string
	// PostPath, if set, is a POST path the server serves: the body attacks use it, and
	// ReadTimeout is the server's bound on reading a whole request.
	PostPath    string
	ReadTimeout time.Duration
	// IdleConns is how many connections that never send the suite holds open at once.
	IdleConns int
	// Router, if set, is the service's router as it serves Addr: the request-level attacks
	// (routeAttacks) run against every route of it (chi.Walk), so that a route added to the
	// service is attacked without anyone editing the suite.
	Router http.Handler
	// Valid maps a route pattern to a request path the service serves for it, where "1" for
	// every parameter and "app.js" for a wildcard would not do: a query it needs
	// ("/sse?posts=1"), a file it has, a kind it takes. The values of that query are attacked as
	// the path's parameters are.
	Valid map[string]string
	// Headers ("Name: value") go with every request of the route attacks: an identity the
	// service accepts, so that a hostile request taken for a valid one would change something.
	Headers []string
	// Stored, if set, counts what the service has stored (its Redis keys): an attack whose every
	// request is hostile must leave it unchanged.
	Stored func(t *testing.T) int64
	// After checks, after each attack, that the server still does its job.
	After func(t *testing.T)
}

// heapBound is how far the heap may grow over the suite, once every attack's connections are
// closed: the suite's own clients and one viewer's state are well within it; a leak per attack
// connection (thousands of them) is not.
const heapBound = 32 << 20

// Run runs every attack against tg, each as a subtest, and the checks after each: the attacks on
// one path (Path, ListPath, PostPath), then, when tg.Router is set, the request-level attacks on
// every route of it.
func Run(t *testing.T, tg Target) {
	all := attacks(tg)
	if tg.Router != nil {
		routes, err := walkRoutes(tg.Router, tg.Valid)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, routeAttacks(tg, routes)...)
	}
	base := heapInUse()
	for _, a := range all {
		t.Run(a.name, func(t *testing.T) {
			a.run(t, tg)
			if code := status(tg.Addr, "/healthz"); code != http.StatusOK {
				t.Fatalf("after %s: /healthz answered %d; want 200", a.name, code)
			}
			poll.Check(t, 10*time.Second, func() error {
				if grown := int64(heapInUse()) - int64(base); grown > heapBound {
					return fmt.Errorf("heap grew %d MiB over the suite; want at most %d", grown>>20, heapBound>>20)
				}
				return nil
			})
			if tg.After != nil {
				tg.After(t)
			}
		})
	}
}

type attack struct {
	name string
	run  func(t *testing.T, tg Target)
}

func attacks(tg Target) []attack {
	host := "Host: t\r\n"
	get := func(target string) string { return "GET " + target + " HTTP/1.1\r\n" + host + "\r\n" }
	all := []attack{
		{"slow head", func(t *testing.T, tg Target) { trickle(t, tg, "GET "+tg.Path+" HTTP/1.1\r\n"+host+"X-Slow: ") }},
		{"oversized head", func(t *testing.T, tg Target) {
			pad := strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 64)
			refused(t, tg, "GET "+tg.Path+" HTTP/1.1\r\n"+host+pad+"\r\n", http.StatusRequestHeaderFieldsTooLarge, http.StatusBadRequest)
		}},
		{"oversized URI", func(t *testing.T, tg Target) {
			refused(t, tg, get(tg.Path+"?x="+strings.Repeat("a", 64<<10)), http.StatusRequestHeaderFieldsTooLarge, http.StatusRequestURITooLong, http.StatusBadRequest)
		}},
		{"bare LF", func(t *testing.T, tg Target) { answered(t, tg, "GET "+tg.Path+" HTTP/1.1\n"+"Host: t\n\n") }},
		{"bare LF after the request line alone", func(t *testing.T, tg Target) { answered(t, tg, "GET "+tg.Path+" HTTP/1.0\r\n\n") }},
		{"lone CR", func(t *testing.T, tg Target) {
			refused(t, tg, "GET "+tg.Path+" HTTP/1.1\rHost: t\r\n\r\n", http.StatusBadRequest)
		}},
		{"lone CR in a value", func(t *testing.T, tg Target) {
			refused(t, tg, "GET "+tg.Path+" HTTP/1.1\r\n"+host+"X-A: a\rb\r\n\r\n", http.StatusBadRequest)
		}},
		{"NUL in the target", func(t *testing.T, tg Target) { refused(t, tg, get(tg.Path+"\x00"), http.StatusBadRequest) }},
		{"NUL in a header", func(t *testing.T, tg Target) {
			refused(t, tg, "GET "+tg.Path+" HTTP/1.1\r\n"+host+"X-A: \x00\r\n\r\n", http.StatusBadRequest)
		}},
		{"pipelined", func(t *testing.T, tg Target) {
			answered(t, tg, get("/healthz")+get(tg.Path)+get("/healthz"))
			answered(t, tg, get(tg.Path)+get(tg.Path))
		}},
		{"half-close", func(t *testing.T, tg Target) { halfClosed(t, tg, get(tg.Path)) }},
		{"TLS on the plain port", func(t *testing.T, tg Target) { tlsHello(t, tg) }},
		{"HTTP/2 preface", func(t *testing.T, tg Target) { answered(t, tg, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") }},
		{"HTTP/2 preface on a stream path", func(t *testing.T, tg Target) {
			answered(t, tg, "PRI "+tg.Path+" HTTP/2.0\r\n\r\nSM\r\n\r\n")
		}},
		{"huge list", func(t *testing.T, tg Target) {
			ids := make([]string, 10000)
			for i := range ids {
				ids[i] = strconv.Itoa(i)
			}
			refused(t, tg, get(tg.ListPath+strings.Join(ids, ",")), http.StatusBadRequest, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge)
		}},
		{"connections that never send", func(t *testing.T, tg Target) { idle(t, tg) }},
	}
	if tg.PostPath == "" {
		return all
	}
	post := "POST " + tg.PostPath + " HTTP/1.1\r\n" + host
	return append(all,
		attack{"slow body", func(t *testing.T, tg Target) {
			slow := tg
			slow.HeadTimeout = tg.ReadTimeout // the body trickles in after a whole head
			trickle(t, slow, post+"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		}},
		attack{"oversized body", func(t *testing.T, tg Target) {
			refused(t, tg, post+"X-User-ID: hostile-body\r\nContent-Length: 104857600\r\n\r\n"+strings.Repeat("a", 1<<20),
				http.StatusRequestEntityTooLarge)
		}},
		attack{"chunked body that never ends", func(t *testing.T, tg Target) {
			slow := tg
			slow.HeadTimeout = tg.ReadTimeout
			trickle(t, slow, post+"Transfer-Encoding: chunked\r\n\r\nffffff\r\n")
		}},
	)
}

// dial connects to tg with a deadline on the whole exchange: the server's head timeout and then
// some, which bounds every attack.
func dial(t *testing.T, tg Target) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", tg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(tg.HeadTimeout + 10*time.Second))
	return c
}

// send writes raw, tolerating a server that has already closed (it may refuse a head before
// reading all of it).
func send(t *testing.T, c net.Conn, raw string) {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil && !closedByPeer(err) {
		t.Fatal(err)
	}
}

// answer sends raw on a new connection and returns the status of the server's answer, or 0 if
// it closed without one; silence past the server's timeouts fails t.
func answer(t *testing.T, tg Target, raw string) int {
	t.Helper()
	c := dial(t, tg)
	send(t, c, raw)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if isTimeout(err) {
			t.Errorf("%.60q: no answer and no close within %v", raw, tg.HeadTimeout+10*time.Second)
		}
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// answered requires an answer that is not a server error (503, a server at its limits, and 505
// aside), or a close.
func answered(t *testing.T, tg Target, raw string) {
	t.Helper()
	if code := answer(t, tg, raw); code >= 500 && code != http.StatusServiceUnavailable && code != http.StatusHTTPVersionNotSupported {
		t.Errorf("%.60q: %d; want a 4xx, a 2xx or a close", raw, code)
	}
}

// refused requires one of the given statuses, or a close.
func refused(t *testing.T, tg Target, raw string, want ...int) {
	t.Helper()
	if code := answer(t, tg, raw); code != 0 && !slices.Contains(want, code) {
		t.Errorf("%.60q: %d; want one of %v or a close", raw, code, want)
	}
}

// trickle sends a head that never ends, a byte every tenth of the head timeout, and requires the
// server to close it before the connection's deadline (the head timeout and 10 s): a server whose
// timeout restarted with each byte would hold it for as long as the trickle lasts. How soon within
// that it closes is not asserted: a loaded machine may delay it by seconds.
func trickle(t *testing.T, tg Target, start string) {
	t.Helper()
	c := dial(t, tg)
	send(t, c, start)
	began := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // exits when stop closes or the server closes
		defer wg.Done()
		trickleEvery(tg.HeadTimeout/10)(c, stop)
	}()
	defer func() { close(stop); wg.Wait() }()
	_, err := io.Copy(io.Discard, c) // whatever it answers (408, 400 or nothing): it must close
	if isTimeout(err) {
		t.Fatalf("a head trickling in for %v was never closed (head timeout %v)", time.Since(began), tg.HeadTimeout)
	}
}

// halfClosed sends raw and closes its side: the server answers, or closes.
func halfClosed(t *testing.T, tg Target, raw string) {
	t.Helper()
	c := dial(t, tg)
	send(t, c, raw)
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(io.Discard, c)
	if isTimeout(err) {
		t.Errorf("half-closed request: neither answered to the end nor closed")
	}
}

// tlsHello starts a real TLS handshake on the plain port: the server must answer it as the bad
// request it is, or close, within its head timeout; the handshake must fail.
func tlsHello(t *testing.T, tg Target) {
	t.Helper()
	c := dial(t, tg)
	//nolint:gosec // the handshake is meant to fail: this is a plain-HTTP port
	err := tls.Client(c, &tls.Config{InsecureSkipVerify: true, ServerName: "t"}).Handshake()
	if err == nil {
		t.Fatal("a TLS handshake succeeded on the plain port")
	}
	if isTimeout(err) {
		t.Errorf("a TLS ClientHello was neither answered nor closed within %v", tg.HeadTimeout+10*time.Second)
	}
}

// idle holds tg.IdleConns connections that never send, and meanwhile requires the server to
// answer /healthz and pass the caller's checks; they are then closed from this side.
func idle(t *testing.T, tg Target) {
	t.Helper()
	conns := make([]net.Conn, 0, tg.IdleConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range tg.IdleConns {
		c, err := net.Dial("tcp", tg.Addr)
		if err != nil {
			t.Fatalf("after %d idle connections: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	if code := status(tg.Addr, "/healthz"); code != http.StatusOK {
		t.Fatalf("with %d idle connections open: /healthz %d", len(conns), code)
	}
	if tg.After != nil {
		tg.After(t)
	}
}

// status GETs path on a fresh connection; 0 when nothing answers.
func status(addr, path string) int {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// heapInUse is the process's live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closedByPeer reports a write or read that failed because the server closed or reset.
func closedByPeer(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/fastaccept"
	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/pkg/serve"
)

// streamPrefix begins every head the fast accept loop reads whole: both stream routes are GETs
// under /sse. Other requests go to net/http as soon as their first bytes differ.
const streamPrefix = "GET /sse"

// fastListen puts the fast accept path (fastaccept) in front of the node's listener: the hub's
// loops accept connections themselves, and an SSE connect is read, admitted and handed to the
// hub by the stream handler's ServeConn on the loop itself, without net/http and without a
// goroutine or a hand-over between accept and the first frame (net/http's per-connection
// buffers, request, routing and middleware were a third of the node's CPU per connect, and the
// hops between goroutines most of the rest at a low connect rate). Everything else reaches the
// returned listener, which net/http serves as before. A head must arrive within the server's
// ReadHeaderTimeout, as net/http's must; the loops judge it within fastaccept.TickEvery.
//
// A stream whose setup waits on Redis (a post the node does not know yet) is served on a
// goroutine of its own (fastaccept.Blocking), so that no loop waits for it.
//
// net/http holds at most maxHTTP connections at once (MAX_HTTP_CONNS); past that a connection
// for it gets a 503 (httpBusy) and is closed. The node's server reports each connection it lets
// go (releaseOnClose).
func fastListen(inner net.Listener, o serve.Options, maxHTTP int, streams *stream.Handler, guard *redisGuard, m *serve.RequestMetrics, reg *prometheus.Registry, log *zap.Logger) (*fastaccept.Listener, error) {
	var pauses atomic.Int64
	onPause := func(err error) { // on an event loop: log the first pause and every 100th after
		if n := pauses.Add(1); n == 1 || n%100 == 0 {
			log.Warn("accept failed; the loop stops accepting for a moment", zap.Error(err), zap.Int64("pauses", n))
		}
	}
	panics := &loopPanics{log: log}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "likes_fanout_loop_panics_total",
		Help: "Panics recovered while an event loop read or served one connection's request head; that connection was closed, every other kept.",
	}, func() float64 { return float64(panics.n.Load()) }))
	ln, err := fastaccept.Listen(inner, fastaccept.Config{Prefix: streamPrefix, HeadTimeout: o.ReadHeaderTimeout,
		OnPause: onPause, OnPanic: panics.recovered, MaxNetHTTP: maxHTTP, Busy: httpBusy()}, fastStreams(streams, guard, m))
	if err != nil {
		return nil, err
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "likes_fanout_http_conns",
		Help: "Connections net/http holds (every request but the streams the event loops serve); at most MAX_HTTP_CONNS.",
	}, func() float64 { return float64(ln.NetHTTP()) }))
	return ln, nil
}

// httpBusy is the answer of a connection past MAX_HTTP_CONNS, as serve.Unavailable would write
// it: a JSON 503 with Retry-After, and the connection closed.
func httpBusy() []byte {
	body := `{"error":"too many connections; retry"}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// releaseOnClose is the server's ConnState hook: it tells ln of every connection net/http lets go,
// closed or hijacked (each connection reaches exactly one of the two), so that ln's bound on
// net/http's connections counts only those it still holds.
func releaseOnClose(ln *fastaccept.Listener) func(net.Conn, http.ConnState) {
	return func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			ln.Released()
		}
	}
}

// loopPanics counts and logs the panics fastaccept recovered on the node's loops. A panic there
// is a bug reached by some client's bytes: the node closes that one connection and goes on, so
// that no request can take the node's viewers down with it.
type loopPanics struct {
	n           atomic.Int64
	log         *zap.Logger
	keepInTests bool // the test of the recovery itself
}

// recovered logs the panic with the head's length and a hash of it, never the bytes themselves
// (they may carry another user's headers), so that the same input can be recognised across logs.
// In a test binary it panics again: a test must fail on the bug, not pass on its recovery.
func (p *loopPanics) recovered(rec any, head []byte) {
	p.n.Add(1)
	sum := sha256.Sum256(head)
	p.log.Error("panic serving a connection on an event loop; the connection was closed",
		zap.Any("panic", rec), zap.Int("head_bytes", len(head)), zap.String("head_sha256", hex.EncodeToString(sum[:8])),
		zap.Stack("stack"))
	if testing.Testing() && !p.keepInTests {
		panic(rec)
	}
}

// fastStreams serves a stream head with the stream handler, as the router's route would: the
// request metrics count it under the same route, method and status; while the Redis guard
// refuses streams, every one goes to net/http, whose guard middleware answers it. A panic is
// fastaccept's to recover (loopPanics).
func fastStreams(streams *stream.Handler, guard *redisGuard, m *serve.RequestMetrics) fastaccept.Handler {
	return func(c net.Conn, hd *fastaccept.Head, mayBlock bool) fastaccept.Outcome {
		if guard.lost.Load() {
			return fastaccept.Declined
		}
		start := time.Now()
		route, status, out := streams.ServeConn(c, hd, mayBlock)
		if out == fastaccept.Taken {
			m.Observe(route, hd.Method, status, time.Since(start))
		}
		return out
	}
}

package main

import (
	"net"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/fastaccept"
	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/pkg/serve"
)

// streamPrefix begins every head the fast accept loop reads whole: both stream routes are GETs
// under /sse. Other requests go to net/http as soon as their first bytes differ.
const streamPrefix = "GET /sse"

// fastListen puts the fast accept path (fastaccept) in front of the node's listener: the hub's
// shards accept connections themselves, and an SSE connect is read, admitted and handed to the
// hub by the stream handler's ServeConn on the shard's own loop, without net/http and without a
// goroutine or a hand-over between accept and the first frame (issue 21 §2: net/http's
// per-connection buffers, request, routing and middleware were a third of the node's CPU per
// connect, and the hops between goroutines most of the rest at a low connect rate). Everything
// else reaches the returned listener, which net/http serves as before. A head must arrive within
// the server's ReadHeaderTimeout, as net/http's must; the shards judge it within
// fastaccept.TickEvery.
//
// A stream whose setup waits on Redis (a post the node does not know yet) is served on a
// goroutine of its own (fastaccept.Blocking), so that no loop waits for it.
func fastListen(inner net.Listener, h *hub.Hub, o serve.Options, streams *stream.Handler, guard *redisGuard, m *serve.RequestMetrics, log *zap.Logger) (*fastaccept.Listener, error) {
	var pauses atomic.Int64
	onPause := func(err error) { // on a shard's loop: log the first pause and every 100th after
		if n := pauses.Add(1); n == 1 || n%100 == 0 {
			log.Warn("accept failed; the shard stops accepting for a moment", zap.Error(err), zap.Int64("pauses", n))
		}
	}
	ln, err := fastaccept.Listen(inner, fastaccept.Config{Prefix: streamPrefix, HeadTimeout: o.ReadHeaderTimeout, OnPause: onPause},
		fastStreams(streams, guard, m, log))
	if err != nil {
		return nil, err
	}
	h.Listen(ln)
	return ln, nil
}

// fastStreams serves a stream head with the stream handler, as the router's route would: the
// request metrics count it under the same route, method and status; while the Redis guard
// refuses streams, every one goes to net/http, whose guard middleware answers it; a panic is
// logged and closes the connection, as net/http's recovery would.
func fastStreams(streams *stream.Handler, guard *redisGuard, m *serve.RequestMetrics, log *zap.Logger) fastaccept.Handler {
	return func(c net.Conn, hd *fastaccept.Head, mayBlock bool) (out fastaccept.Outcome) {
		if guard.lost.Load() {
			return fastaccept.Declined
		}
		defer func() {
			if rec := recover(); rec != nil {
				log.Error("stream panic", zap.Any("panic", rec), zap.Stack("stack"))
				_ = c.Close()
				out = fastaccept.Taken
			}
		}()
		start := time.Now()
		route, status, out := streams.ServeConn(c, hd, mayBlock)
		if out == fastaccept.Taken {
			m.Observe(route, hd.Method, status, time.Since(start))
		}
		return out
	}
}

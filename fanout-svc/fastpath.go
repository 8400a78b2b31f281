package main

import (
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/fastaccept"
	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/pkg/serve"
)

// streamPrefix begins every head the fast accept loop reads whole: both stream routes are GETs
// under /sse. Other requests go to net/http as soon as their first bytes differ.
const streamPrefix = "GET /sse"

// fastListen puts the fast accept loop (fastaccept) in front of the node's listener: SSE connects
// are read, admitted and handed to the hub by the stream handler's ServeConn without net/http
// (issue 21 §2: net/http's per-connection buffers, request, routing and middleware were a third
// of the node's CPU per connect); everything else reaches the returned listener, which net/http
// serves as before. A head must arrive within the server's ReadHeaderTimeout, as net/http's must.
//
// One goroutine per connection reads its head, as the bare floor (hub.BenchmarkBareConnect) and
// net/http have: a client that sends half a head and stalls then holds only its own goroutine
// (a few KiB), and setup of a post the node does not know yet waits on Redis, which must not hold
// the accept loop either. Reading heads on the accept goroutine would save the goroutine's start,
// small beside net/http's buffers, request and routing, which is what this replaces.
func fastListen(ln net.Listener, o serve.Options, streams *stream.Handler, guard *redisGuard, m *serve.RequestMetrics, log *zap.Logger) *fastaccept.Listener {
	return fastaccept.Listen(ln, fastaccept.Config{Prefix: streamPrefix, HeadTimeout: o.ReadHeaderTimeout},
		fastStreams(streams, guard, m, log))
}

// fastStreams serves a stream head with the stream handler, as the router's route would: the
// request metrics count it under the same route, method and status; while the Redis guard
// refuses streams, every one goes to net/http, whose guard middleware answers it; a panic is
// logged and closes the connection, as net/http's recovery would.
func fastStreams(streams *stream.Handler, guard *redisGuard, m *serve.RequestMetrics, log *zap.Logger) fastaccept.Handler {
	return func(c net.Conn, hd *fastaccept.Head) (taken bool) {
		if guard.lost.Load() {
			return false
		}
		defer func() {
			if rec := recover(); rec != nil {
				log.Error("stream panic", zap.Any("panic", rec), zap.Stack("stack"))
				_ = c.Close()
				taken = true
			}
		}()
		start := time.Now()
		route, status, ok := streams.ServeConn(c, hd)
		if ok {
			m.Observe(route, hd.Method, status, time.Since(start))
		}
		return ok
	}
}

// Package fastaccept lets event loops accept connections themselves and serve one kind of
// request without net/http: each loop watches the listening socket in its own epoll instance
// (Listener.Attach), accepts, reads each request head, and gives a head that starts with the
// configured prefix and parses as a plain HTTP/1.x request without a body to a handler that may
// take the connection whole, all on the loop's goroutine. Everything else (other paths and
// methods, HTTP/2, upgrades, heads it does not understand, bodies, pipelined requests, and heads
// the handler declines) goes to net/http untouched, through the Listener, whose connections
// replay the bytes already read.
//
// It exists for fanout-svc's SSE connects: a stream leaves net/http by Hijack after
// one request anyway; net/http's per-connection buffers, request parsing and routing were a third
// of the node's CPU per connect, and the hops between goroutines (accept, the head's reader, the
// loop's inbox) most of the rest when connects arrive one at a time. Served on the loop itself,
// a connect costs what it costs nginx: accept4, one read, one epoll_ctl and one write.
//
// The accepted sockets never enter Go's poller (Conn): a connection the handler declines is
// turned into one of Go's (a dup of the descriptor) on its way to net/http, which is the slow
// path, for the node's other requests.
package fastaccept

// Package fastaccept is an accept loop in front of net/http that serves one kind of request
// itself: it reads the request head off each new connection, and a head that starts with the
// configured prefix and parses as a plain HTTP/1.x request without a body is given to a handler
// that may take the connection whole. Everything else (other paths and methods, HTTP/2, upgrades,
// heads it does not understand, bodies, pipelined requests, and heads the handler declines) goes
// to net/http untouched, through a net.Listener whose connections replay the bytes already read.
//
// It exists for fanout-svc's SSE connects (issue 21 §2): a stream leaves net/http by Hijack after
// one request anyway, and net/http's per-connection buffers, request parsing and routing were a
// third of the node's CPU per connect.
package fastaccept

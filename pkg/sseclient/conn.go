package sseclient

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/likes/likes/pkg/sse"
)

// Request is one stream request, sent as an HTTP/1.1 GET.
type Request struct {
	Addr        string   // host:port to connect to
	Path        string   // request target: "/sse/42", "/sse?posts=a,b"
	Host        string   // the Host header; Addr when empty
	LastEventID string   // sent as Last-Event-ID when not empty
	Header      []string // more header lines, each "Name: value"
	ReadSize    int      // bytes asked of each read; 4 KiB when 0 (a crowd of thousands wants less)
}

// URLRequest returns the Request for an http:// URL: its host:port (port 80 when it has none),
// path and query.
func URLRequest(raw string) (Request, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Request{}, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return Request{}, fmt.Errorf("sseclient: %q is not an http:// URL", raw)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return Request{Addr: addr, Path: u.RequestURI(), Host: u.Host}, nil
}

// appendTo appends the request's bytes to b.
func (r Request) appendTo(b []byte) []byte {
	host := r.Host
	if host == "" {
		host = r.Addr
	}
	b = append(b, "GET "...)
	b = append(b, r.Path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\nAccept: text/event-stream\r\n"...)
	if r.LastEventID != "" {
		b = append(b, "Last-Event-ID: "...)
		b = append(b, r.LastEventID...)
		b = append(b, "\r\n"...)
	}
	for _, h := range r.Header {
		b = append(b, h...)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

// Conn is one stream read with blocking reads from a TCP connection. Its methods are for one
// goroutine, except Close and Comments, which may be called from any.
type Conn struct {
	conn     net.Conn
	stream   Stream
	buf      []byte
	pending  []byte       // body bytes read together with the head, not decoded yet
	comments atomic.Int64 // stream.Comments(), for other goroutines
	tap      func([]byte)
}

// readSize is how much one Read asks the kernel for by default: a few frames of a busy multi-post
// stream.
const readSize = 4 << 10

// Dial connects to req.Addr and sends req. ctx bounds the connect and the write only; the
// response is read by Head and Run, which take a context of their own.
func Dial(ctx context.Context, req Request) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", req.Addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetWriteDeadline(dl)
	}
	if _, err := c.Write(req.appendTo(nil)); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	size := req.ReadSize
	if size <= 0 {
		size = readSize
	}
	return &Conn{conn: c, buf: make([]byte, size)}, nil
}

// New reads a stream from c: a connection on which a request was sent already, or, in the hub's
// tests, one whose server end writes a response unasked. The Conn owns c from now on.
func New(c net.Conn) *Conn {
	return &Conn{conn: c, buf: make([]byte, readSize)}
}

// Head reads until the response head is complete. It returns nil for status 200, a *StatusError
// for any other status, ctx's error when ctx ended first (the connection is closed then), and the
// read's or the parser's error otherwise. Events that arrived with the head are kept for Run.
// Calling Head again after it returned nil does nothing.
func (c *Conn) Head(ctx context.Context) error {
	return c.closeOnDone(ctx, c.head)
}

// Run reads the head (if Head has not) and then the body, calling emit for every event, until the
// stream ends, and returns why: the read's error (io.EOF when the server closed it), ErrEnd when
// a chunked body ended, a *StatusError, a parse error, or ctx's error when ctx ended first (the
// connection is closed then). emit runs on Run's goroutine; the event is valid only during the
// call.
func (c *Conn) Run(ctx context.Context, emit func(*sse.Event)) error {
	return c.closeOnDone(ctx, func() error { return c.run(emit) })
}

// closeOnDone runs f, which blocks in reads, and closes the connection if ctx ends first so that
// f returns.
func (c *Conn) closeOnDone(ctx context.Context, f func() error) error {
	stop := context.AfterFunc(ctx, func() { _ = c.conn.Close() })
	err := f()
	if !stop() && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (c *Conn) head() error {
	for !c.stream.headDone {
		n, err := c.conn.Read(c.buf)
		if n > 0 {
			rest, herr := c.stream.readHead(c.buf[:n])
			if herr != nil {
				return herr
			}
			if c.stream.headDone {
				c.pending = append(c.pending[:0], rest...)
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
	if c.stream.status != 200 {
		return &StatusError{Code: c.stream.status, RetryAfter: c.stream.retry}
	}
	return nil
}

func (c *Conn) run(emit func(*sse.Event)) error {
	if err := c.head(); err != nil {
		return err
	}
	if len(c.pending) > 0 {
		p := c.pending
		c.pending = nil
		if err := c.feed(p, emit); err != nil {
			return err
		}
	}
	for {
		n, err := c.conn.Read(c.buf)
		if n > 0 {
			if ferr := c.feed(c.buf[:n], emit); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			return err
		}
	}
}

func (c *Conn) feed(p []byte, emit func(*sse.Event)) error {
	if c.tap != nil {
		c.tap(p)
	}
	err := c.stream.Feed(p, emit)
	c.comments.Store(int64(c.stream.Comments()))
	return err
}

// Tap makes Run call f with the body's bytes as read, before they are decoded (chunk framing
// included), on Run's goroutine: for tests of the bytes on the wire. Call it before Run.
func (c *Conn) Tap(f func(body []byte)) { c.tap = f }

// Comments returns how many comment lines (heartbeats) the stream has carried so far. Unlike the
// other methods, it may be called from any goroutine.
func (c *Conn) Comments() int { return int(c.comments.Load()) }

// SetDeadline sets the connection's read and write deadline, as net.Conn's does.
func (c *Conn) SetDeadline(t time.Time) error { return c.conn.SetDeadline(t) }

// Close closes the connection; a Run in progress returns.
func (c *Conn) Close() error { return c.conn.Close() }

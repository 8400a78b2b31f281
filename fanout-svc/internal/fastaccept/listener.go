package fastaccept

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"time"
)

// MaxHead is the largest request head the loop reads; a longer one goes to net/http, whose
// MaxHeaderBytes decides (431 beyond it).
const MaxHead = 8 << 10

// DefaultMaxPending bounds the connections whose heads the loop reads at once; past it new
// connections go to net/http straight away, so a crowd of slow clients costs the fast path its
// speed, never its memory.
const DefaultMaxPending = 4096

// Handler may take a connection whose head h the loop read (and nothing after it: the head was
// the whole of what the client sent so far). Returning true means it took the connection, and
// closes it when done; false leaves it untouched, and it goes to net/http with the head. It runs on
// the connection's own goroutine; h is valid only during the call.
type Handler func(c net.Conn, h *Head) bool

// Config is the loop's behaviour.
type Config struct {
	// Prefix is how the heads the handler wants begin (e.g. "GET /sse"); a connection whose first
	// bytes differ goes to net/http as soon as they arrive.
	Prefix string
	// HeadTimeout bounds the time from accept to a whole head (the server's ReadHeaderTimeout); a
	// client slower than that is closed. 0: 5 s.
	HeadTimeout time.Duration
	// MaxPending bounds the heads read at once. 0: DefaultMaxPending.
	MaxPending int
}

// Listener runs the accept loop on an inner listener and is itself the net.Listener net/http
// serves: Accept returns the connections the loop hands over. Close stops the loop and closes
// the connections still sending their heads; Wait returns once every connection's goroutine has
// finished, including handlers still running.
type Listener struct {
	inner   net.Listener
	cfg     Config
	handler Handler
	handoff chan net.Conn
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when the loop has stopped
	wg      sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]struct{} // connections whose heads are being read
}

var bufs = sync.Pool{New: func() any { return new([MaxHead]byte) }}

// Listen starts the loop on inner. The caller serves the returned Listener with net/http and
// calls Wait after the server stopped.
func Listen(inner net.Listener, cfg Config, handler Handler) *Listener {
	if cfg.HeadTimeout <= 0 {
		cfg.HeadTimeout = 5 * time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	l := &Listener{inner: inner, cfg: cfg, handler: handler, handoff: make(chan net.Conn),
		closing: make(chan struct{}), done: make(chan struct{}), pending: make(map[net.Conn]struct{})}
	l.wg.Add(1)
	go func() { // exits when Close closes the inner listener
		defer l.wg.Done()
		l.loop()
	}()
	return l
}

// loop accepts until the inner listener fails for good. A failure that may pass (out of file
// descriptors, an aborted connection) is retried after a pause growing to a second, as net/http
// does.
func (l *Listener) loop() {
	defer close(l.done)
	var pause time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || l.isClosed() {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(pause):
				continue
			case <-l.closing:
				return
			}
		}
		pause = 0
		if !l.track(c) {
			l.give(c, nil) // too many heads in flight, or closing
			continue
		}
		l.wg.Add(1)
		go func() { // exits once the head is read and served, handed over, or timed out
			defer l.wg.Done()
			l.serve(c)
		}()
	}
}

// serve reads c's head and gives it to the handler or to net/http. The head read is bounded by
// HeadTimeout from accept and by MaxHead bytes.
func (l *Listener) serve(c net.Conn) {
	buf := bufs.Get().(*[MaxHead]byte)
	defer bufs.Put(buf)
	_ = c.SetReadDeadline(time.Now().Add(l.cfg.HeadTimeout))
	n, end := 0, -1
	prefix := l.cfg.Prefix
	for end < 0 {
		m, err := c.Read(buf[n:])
		n += m
		if p := min(n, len(prefix)); !bytes.Equal(buf[:p], []byte(prefix[:p])) {
			break // not ours: net/http reads the rest with its own timeouts
		}
		if n >= len(prefix) {
			end = headEnd(buf[:n])
		}
		if end >= 0 || n == len(buf) {
			break
		}
		if err != nil {
			l.untrack(c)
			_ = c.Close() // timed out, reset, or closed by Close: as net/http would
			return
		}
	}
	l.untrack(c)
	if end >= 0 && end == n {
		var h Head
		if parse(buf[:n], &h) && l.handler(c, &h) {
			return
		}
	}
	_ = c.SetReadDeadline(time.Time{}) // net/http sets its own
	l.give(c, bytes.Clone(buf[:n]))
}

// give hands c, with the bytes already read from it, to net/http's Accept; after Close it closes
// c instead.
func (l *Listener) give(c net.Conn, read []byte) {
	conn := c
	if len(read) > 0 {
		conn = &replayConn{Conn: c, buf: read}
	}
	select {
	case l.handoff <- conn:
	case <-l.closing:
		_ = c.Close()
	}
}

// Accept returns the next connection for net/http.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.handoff:
		return c, nil
	case <-l.closing:
		return nil, net.ErrClosed
	case <-l.done: // the inner listener was closed under us
		return nil, net.ErrClosed
	}
}

// Close stops the loop and closes the connections whose heads are still being read (their
// clients reconnect, as they would to a node shutting down). Handlers already running go on;
// Wait waits for them.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.closing)
	for c := range l.pending {
		_ = c.SetReadDeadline(time.Now()) // its goroutine closes it
	}
	l.mu.Unlock()
	return l.inner.Close()
}

// Wait returns once the loop and every connection's goroutine have finished.
func (l *Listener) Wait() { l.wg.Wait() }

// Addr is the inner listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// track counts c as reading its head, unless MaxPending are or the listener is closed.
func (l *Listener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.pending) >= l.cfg.MaxPending {
		return false
	}
	l.pending[c] = struct{}{}
	return true
}

func (l *Listener) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
}

func (l *Listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

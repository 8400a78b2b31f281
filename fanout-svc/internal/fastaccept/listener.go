package fastaccept

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxHead is the largest request head the loop reads; a longer one goes to net/http, whose
// MaxHeaderBytes decides (431 beyond it).
const MaxHead = 8 << 10

// DefaultMaxPending bounds the connections whose heads a loop waits for at once; past it new
// connections go to net/http straight away, so a crowd of slow clients costs the fast path its
// speed, never its memory.
const DefaultMaxPending = 4096

// Outcome is what a handler did with a connection.
type Outcome int

const (
	// Declined: the connection goes to net/http with its head, untouched.
	Declined Outcome = iota
	// Taken: the handler owns the connection and closes it when done.
	Taken
	// Blocking: serving it would wait (on Redis, say), which an event loop must not; the handler
	// is called again with the same head on a goroutine of its own, where it may wait.
	Blocking
)

// Handler may take a connection whose head h a loop read (and nothing after it: the head was the
// whole of what the client sent so far). With mayBlock false it runs on the loop that accepted
// the connection, beside every other connection of that loop, and must return Blocking rather
// than wait for anything; with mayBlock true it runs on a goroutine of its own and must not
// return Blocking. h is valid only during the call.
type Handler func(c net.Conn, h *Head, mayBlock bool) Outcome

// Config is the loops' behaviour.
type Config struct {
	// Prefix is how the heads the handler wants begin (e.g. "GET /sse"); a connection whose first
	// bytes differ goes to net/http as soon as they arrive.
	Prefix string
	// HeadTimeout bounds the time from accept to a whole head (the server's ReadHeaderTimeout); a
	// client slower than that is closed. A loop judges it on its own clock (Intake.Tick), within
	// TickEvery. 0: 5 s.
	HeadTimeout time.Duration
	// MaxPending bounds the heads each loop waits for at once. 0: DefaultMaxPending.
	MaxPending int
	// OnPause, if set, is told why a loop stopped accepting for a while (out of descriptors or
	// memory: accept4's EMFILE, ENFILE, ENOBUFS, ENOMEM). It runs on the loop and must not block.
	OnPause func(err error)
	// OnPanic, if set, is told of a panic recovered while a loop (or a Blocking handler's
	// goroutine) read or served one connection's head, with the head as read; that connection is
	// closed, the loop goes on. It runs where the panic was and must not block; it may panic
	// itself, which ends the process (tests do, so that a bug fails them).
	OnPanic func(p any, head []byte)
	// MaxNetHTTP bounds the connections net/http holds at once: from their hand-over (Accept)
	// until net/http closes or hijacks them, which the server reports with Released. Past it, a
	// connection that would go to net/http is answered Busy and closed at once, so that clients
	// that hold requests open (a body never sent, a slow read) cost a bounded number of
	// descriptors and goroutines; the fast path's streams never count. 0: no bound.
	MaxNetHTTP int
	// Busy is the answer of a connection past MaxNetHTTP (a whole HTTP response); nil: none.
	Busy []byte
}

// Listener owns a listening socket that event loops accept from themselves (Attach), and is the
// net.Listener net/http serves: Accept returns the connections the loops hand over. Close stops
// the loops' accepting and closes the connections still sending their heads; Wait returns once
// every handler running on a goroutine of its own (Blocking) has returned.
type Listener struct {
	fd      int // a descriptor of the socket Go's poller does not watch
	addr    net.Addr
	cfg     Config
	handler Handler
	handoff chan net.Conn
	closing chan struct{} // closed by Close
	wg      sync.WaitGroup

	pending atomic.Int64 // heads the loops are waiting for (Pending)
	netHTTP atomic.Int64 // connections handed to net/http and not yet Released (NetHTTP)

	mu      sync.Mutex
	closed  bool
	intakes map[*Intake]struct{}
}

// handoffQueue is how many connections the loops may have waiting for net/http's Accept before
// one has to be handed over by a goroutine of its own.
const handoffQueue = 256

// Listen takes inner's socket for the loops: it keeps a descriptor of its own of the socket and
// closes inner, so that Go's poller is not woken by every connection the loops accept. The
// caller serves the returned Listener with net/http, attaches its event loops, and calls Wait
// after the server stopped.
func Listen(inner net.Listener, cfg Config, handler Handler) (*Listener, error) {
	if cfg.HeadTimeout <= 0 {
		cfg.HeadTimeout = 5 * time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	fd, err := dupSocket(inner)
	if err != nil {
		_ = inner.Close()
		return nil, err
	}
	addr := inner.Addr()
	if err := inner.Close(); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return &Listener{fd: fd, addr: addr, cfg: cfg, handler: handler, handoff: make(chan net.Conn, handoffQueue),
		closing: make(chan struct{}), intakes: make(map[*Intake]struct{})}, nil
}

// dupSocket returns a non-blocking, close-on-exec duplicate of a listener's socket.
func dupSocket(l net.Listener) (int, error) {
	sc, ok := l.(syscall.Conn)
	if !ok {
		return -1, errors.New("fastaccept: listener has no socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("dup listener: %w", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// Accept returns the next connection for net/http.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.handoff:
		return c, nil
	case <-l.closing:
		return nil, net.ErrClosed
	}
}

// Close stops every attached loop's accepting, closes the connections whose heads they were
// waiting for (their clients reconnect, as they would to a node shutting down), and then the
// socket. It returns once each loop has let go of the socket. Handlers already running go on;
// Wait waits for them.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.closing)
	intakes := make([]*Intake, 0, len(l.intakes))
	for in := range l.intakes {
		intakes = append(intakes, in)
	}
	l.mu.Unlock()
	for _, in := range intakes {
		in.wake()
		<-in.detached
	}
	l.closeQueued()
	return unix.Close(l.fd)
}

// Wait returns once every handler running on a goroutine of its own, and every hand-over to
// net/http waiting on one, has finished.
func (l *Listener) Wait() {
	l.wg.Wait()
	l.closeQueued() // what a last hand-over queued while Close emptied the queue
}

// closeQueued closes the connections queued for net/http that it will not accept any more.
func (l *Listener) closeQueued() {
	for {
		select {
		case c := <-l.handoff:
			l.drop(c)
		default:
			return
		}
	}
}

// Pending is how many connections' heads the loops are waiting for.
func (l *Listener) Pending() int { return int(l.pending.Load()) }

// Addr is the socket's address.
func (l *Listener) Addr() net.Addr { return l.addr }

// give hands c, with the bytes already read from it, to net/http's Accept. It never waits: with
// net/http behind, the hand-over goes on on a goroutine of its own. After Close it closes c;
// past MaxNetHTTP it answers c Busy and closes it.
func (l *Listener) give(c *Conn, read []byte) {
	if !l.takeNetHTTP() {
		if len(l.cfg.Busy) > 0 {
			_, _ = c.Write(l.cfg.Busy) // small enough for any socket's buffer; never waits
		}
		_ = c.Close()
		return
	}
	nc, err := c.netConn()
	if err != nil {
		l.Released()
		return // the descriptor is closed; the client sees the connection end
	}
	if len(read) > 0 {
		nc = &replayConn{Conn: nc, buf: read}
	}
	select {
	case <-l.closing:
		l.drop(nc)
		return
	default:
	}
	select {
	case l.handoff <- nc:
		return
	case <-l.closing:
		l.drop(nc)
		return
	default:
	}
	l.wg.Add(1)
	go func() { // exits once net/http accepted the connection or the listener closed
		defer l.wg.Done()
		select {
		case l.handoff <- nc:
		case <-l.closing:
			l.drop(nc)
		}
	}()
}

// takeNetHTTP counts one more connection for net/http, unless MaxNetHTTP are there already.
func (l *Listener) takeNetHTTP() bool {
	if n := l.netHTTP.Add(1); l.cfg.MaxNetHTTP > 0 && n > int64(l.cfg.MaxNetHTTP) {
		l.netHTTP.Add(-1)
		return false
	}
	return true
}

// drop closes a connection counted for net/http that net/http will never accept.
func (l *Listener) drop(nc net.Conn) {
	_ = nc.Close()
	l.Released()
}

// Released tells the listener that net/http let go of one of the connections Accept returned: it
// closed it or a handler hijacked it (http.Server.ConnState's StateClosed and StateHijacked,
// each reported once per connection). A hijacked stream is the hub's from then on and counts
// against the node's viewers, not against MaxNetHTTP.
func (l *Listener) Released() { l.netHTTP.Add(-1) }

// NetHTTP is how many connections net/http holds (MaxNetHTTP).
func (l *Listener) NetHTTP() int { return int(l.netHTTP.Load()) }

// panicked reports a recovered panic to Config.OnPanic.
func (l *Listener) panicked(p any, head []byte) {
	if l.cfg.OnPanic != nil {
		l.cfg.OnPanic(p, head)
	}
}

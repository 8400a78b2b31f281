package fastaccept

import (
	"bytes"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/fanout-svc/internal/epoll"
)

// Intake is one event loop's share of a Listener: the loop watches the listening socket in its
// own poller (exclusively: a connection wakes one of the loops), accepts, reads each head and
// calls the handler, all on its own goroutine, with no hand-over between accept and the
// handler. Its methods are the loop's alone to call, except that Close of the Listener wakes the
// loop, whose next Closing reports true.
//
// A head usually arrives with the connection (the listening socket defers accept until the
// client has sent something, TCP_DEFER_ACCEPT, where the node sets it), so most connections are
// read once and never enter the poller as pending; a head that arrives in pieces is watched in
// the loop's poller until it is whole, the client stalls past HeadTimeout, or it is handed over.
type Intake struct {
	l       *Listener
	poller  *epoll.Poller
	wake    func()
	home    any
	buf     []byte               // the head of a connection read in one go
	pending map[int]*pendingHead // by descriptor
	order   []*pendingHead       // by arrival, so by deadline (HeadTimeout is one for all)
	paused  int64                // while accept fails for lack of descriptors: when to try again
	clock   func() int64

	detached chan struct{} // closed by Detach
	once     sync.Once
}

// pendingHead is a connection whose head has not all arrived.
type pendingHead struct {
	c        *Conn
	buf      *[MaxHead]byte
	n        int
	deadline int64
	done     bool // served, handed over or closed: its entry in order is stale
}

var heads = sync.Pool{New: func() any { return new([MaxHead]byte) }}

// acceptBatch bounds the connections one Accept takes, so that a crowd connecting at once does
// not hold the loop's viewers for long; the socket is level-triggered, so the rest wake it again.
const acceptBatch = 64

// acceptPause is how long a loop stops accepting after accept failed for want of descriptors or
// memory, as net/http backs off: the connections wait in the backlog meanwhile.
const acceptPause = 100 * time.Millisecond

// Attach adds a loop to l: the loop's poller watches the listening socket from now on, wake
// wakes the loop (from Close), and home is what the Conns the loop accepts report as their Home.
// The loop calls Detach when Closing reports true or when it stops.
func (l *Listener) Attach(poller *epoll.Poller, wake func(), home any) (*Intake, error) {
	in := &Intake{l: l, poller: poller, wake: wake, home: home, buf: make([]byte, MaxHead),
		pending: make(map[int]*pendingHead), detached: make(chan struct{}), clock: monotonic()}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, net.ErrClosed
	}
	if err := poller.AddListener(l.fd); err != nil {
		return nil, err
	}
	l.intakes[in] = struct{}{}
	return in, nil
}

// monotonic returns a clock in nanoseconds since now.
func monotonic() func() int64 {
	epoch := time.Now()
	return func() int64 { return int64(time.Since(epoch)) }
}

// ListenFD is the listening socket's descriptor: an event of the loop's poller on it means
// connections wait to be accepted.
func (in *Intake) ListenFD() int { return in.l.fd }

// Closing reports whether the Listener is closing; the loop then calls Detach.
func (in *Intake) Closing() bool {
	select {
	case <-in.l.closing:
		return true
	default:
		return false
	}
}

// Event handles an event of the loop's poller on fd and reports whether fd was the intake's (the
// listening socket or a pending head).
func (in *Intake) Event(fd int) bool {
	if fd == in.l.fd {
		in.accept()
		return true
	}
	p := in.pending[fd]
	if p == nil {
		return false
	}
	in.readMore(p)
	return true
}

// Waiting reports whether the intake has a deadline coming: heads pending, or accepting paused.
// The loop then calls Tick at least every TickEvery.
func (in *Intake) Waiting() bool { return in.paused != 0 || len(in.order) > 0 }

// TickEvery is how often a loop calls Tick while the intake is Waiting: the precision of
// HeadTimeout and of the pause after accept failed.
const TickEvery = 10 * time.Millisecond

// TickEvery returns TickEvery, for a loop that knows the intake by its methods alone.
func (in *Intake) TickEvery() time.Duration { return TickEvery }

// Tick closes the pending heads past their deadline and resumes accepting after a pause.
func (in *Intake) Tick() {
	now := in.clock()
	for len(in.order) > 0 {
		p := in.order[0]
		if !p.done && p.deadline > now {
			break
		}
		in.order[0] = nil
		in.order = in.order[1:]
		if !p.done {
			in.forget(p)
			_ = p.c.Close() // too slow: as net/http's ReadHeaderTimeout would
		}
	}
	if in.paused != 0 && now >= in.paused {
		in.paused = 0
		_ = in.poller.AddListener(in.l.fd)
	}
}

// Detach stops the loop's accepting and closes the heads it was waiting for. Idempotent; the
// loop calls it when Closing reports true, and when it stops.
func (in *Intake) Detach() {
	in.once.Do(func() {
		if in.paused == 0 {
			in.poller.Remove(in.l.fd)
		}
		for _, p := range in.pending {
			in.forget(p)
			_ = p.c.Close()
		}
		in.order = nil
		in.l.mu.Lock()
		delete(in.l.intakes, in)
		in.l.mu.Unlock()
		close(in.detached)
	})
}

// accept takes up to acceptBatch connections and serves each head that came with its
// connection.
func (in *Intake) accept() {
	for range acceptBatch {
		fd, sa, err := epoll.Accept(in.l.fd)
		switch err {
		case 0:
		case unix.EAGAIN:
			return
		case unix.EINTR, unix.ECONNABORTED, unix.EPROTO:
			continue
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			in.poller.Remove(in.l.fd) // level-triggered: it would wake the loop at once, again
			in.paused = in.clock() + int64(acceptPause)
			if in.l.cfg.OnPause != nil {
				in.l.cfg.OnPause(err)
			}
			return
		default:
			return // the socket is closing
		}
		c := &Conn{fd: fd, local: in.l.addr, remote: sa, home: in.home}
		n, closed := readSome(fd, in.buf)
		switch {
		case closed && n > 0: // a request, then a half-close: net/http answers it, as it would have
			in.l.give(c, bytes.Clone(in.buf[:n]))
		case closed:
			_ = c.Close()
		default:
			in.serve(c, in.buf, n, nil)
		}
	}
}

// readSome reads what the socket holds into buf; closed reports a peer that left or a failed
// socket.
func readSome(fd int, buf []byte) (n int, closed bool) {
	for n < len(buf) {
		m, e := epoll.RawRead(fd, buf[n:])
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return n, false
		case e != 0 || m == 0:
			return n, true
		}
		n += m
	}
	return n, false
}

// readMore reads the rest of a pending head.
func (in *Intake) readMore(p *pendingHead) {
	m, closed := readSome(p.c.fd, p.buf[p.n:])
	p.n += m
	if closed { // the head, if it is one, goes to net/http, which answers a half-closed client
		in.unwatch(p)
		in.l.give(p.c, bytes.Clone(p.buf[:p.n]))
		in.release(p)
		return
	}
	if m == 0 {
		return
	}
	in.serve(p.c, p.buf[:], p.n, p)
}

// serve decides what the n bytes read of c's head in buf call for: the handler, net/http, or
// more reading. p is c's pending entry, if it has one.
//
// A panic in reading or serving the head (a bug no fuzzer found) ends with this connection
// closed and reported to Config.OnPanic, never with the loop, and every viewer it holds, gone.
func (in *Intake) serve(c *Conn, buf []byte, n int, p *pendingHead) {
	done := false // p is out of the poller: its buffer goes back to the pool once nothing reads it
	defer func() {
		if rec := recover(); rec != nil {
			in.l.panicked(rec, buf[:n])
			if p != nil && !p.done {
				in.unwatch(p)
				done = true
			}
			_ = c.Close()
		}
		if done {
			in.release(p)
		}
	}()
	prefix := in.l.cfg.Prefix
	end := -1
	if k := min(n, len(prefix)); !bytes.Equal(buf[:k], []byte(prefix[:k])) {
		end = -2 // not ours: net/http reads the rest with its own timeouts
	} else if n >= len(prefix) {
		end = headEnd(buf[:n])
	}
	if end == -1 && n < MaxHead { // not all there yet
		if p == nil && !in.wait(c, buf[:n]) {
			in.l.give(c, bytes.Clone(buf[:n]))
		}
		return
	}
	if p != nil {
		in.unwatch(p)
		done = true // released after the handler and the copies: buf is p's
	}
	if end >= 0 && end == n {
		var h Head
		if parse(buf[:n], &h) {
			c.onLoop.Store(true)
			out := in.l.handler(c, &h, false)
			c.onLoop.Store(false)
			switch out {
			case Taken:
				return
			case Blocking:
				in.l.serveBlocking(c, bytes.Clone(buf[:n]))
				return
			}
		}
	}
	in.l.give(c, bytes.Clone(buf[:n]))
}

// wait makes c a pending head with the n bytes already read, unless MaxPending are.
func (in *Intake) wait(c *Conn, read []byte) bool {
	if len(in.pending) >= in.l.cfg.MaxPending {
		return false
	}
	if err := in.poller.Add(c.fd); err != nil {
		return false
	}
	p := &pendingHead{c: c, buf: heads.Get().(*[MaxHead]byte), n: len(read), deadline: in.clock() + int64(in.l.cfg.HeadTimeout)}
	copy(p.buf[:], read)
	in.pending[c.fd] = p
	in.order = append(in.order, p)
	in.l.pending.Add(1)
	return true
}

// forget ends p's wait: out of the poller and the map, its buffer back in the pool.
func (in *Intake) forget(p *pendingHead) {
	in.unwatch(p)
	in.release(p)
}

// unwatch takes p out of the poller and the map.
func (in *Intake) unwatch(p *pendingHead) {
	p.done = true
	in.poller.Remove(p.c.fd)
	delete(in.pending, p.c.fd)
	in.l.pending.Add(-1)
}

// release puts p's buffer back in the pool.
func (in *Intake) release(p *pendingHead) {
	heads.Put(p.buf)
	p.buf = nil
}

// serveBlocking calls the handler again on a goroutine of its own, for a connection whose
// handler would have waited on the loop.
func (l *Listener) serveBlocking(c *Conn, head []byte) {
	l.wg.Add(1)
	go func() { // exits when the handler returns
		defer l.wg.Done()
		defer func() {
			if rec := recover(); rec != nil {
				l.panicked(rec, head)
				_ = c.Close()
			}
		}()
		var h Head
		if parse(head, &h) && l.handler(c, &h, true) == Taken {
			return
		}
		l.give(c, head)
	}()
}

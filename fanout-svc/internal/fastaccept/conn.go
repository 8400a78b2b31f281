package fastaccept

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/fanout-svc/internal/epoll"
)

// Conn is a connection the loop accepted itself: a non-blocking socket that Go's poller never
// saw, so adopting it costs no registration there and closing it no deregistration. The handler
// that takes it writes to it directly (a refusal, small enough for any socket's buffer) or gives
// its descriptor to an event loop of its own through SyscallConn; nothing reads it through Read
// but whoever owns the descriptor. Deadlines do not apply: the socket never blocks.
type Conn struct {
	fd     int
	local  net.Addr
	remote unix.Sockaddr
	home   any
	onLoop atomic.Bool // inside the handler's call on the loop that accepted it
	closed atomic.Bool
}

var errWouldBlock = errors.New("fastaccept: socket not ready")

// Home is the owner of the loop that accepted the connection (Attach's home): a server with
// several loops may keep the connection on the one that read it.
func (c *Conn) Home() any { return c.home }

// OnLoop reports whether the caller runs inside the handler's call on the loop that accepted c
// (mayBlock false): that loop's owner may then adopt c there and then, without a hand-over.
func (c *Conn) OnLoop() bool { return c.onLoop.Load() }

// Read reads what the peer sent so far; with nothing there it returns an error, not a wait.
func (c *Conn) Read(p []byte) (int, error) {
	for {
		n, e := epoll.RawRead(c.fd, p)
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return 0, errWouldBlock
		case e != 0:
			return 0, e
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes p whole or fails: a socket whose buffer is full is an error, not a wait.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := epoll.Write(c.fd, p)
	if err == nil && n < len(p) {
		err = errWouldBlock
	}
	return n, err
}

// Close closes the socket once.
func (c *Conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	return epoll.RawClose(c.fd)
}

// LocalAddr is the listener's address.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the peer's address, as accept reported it.
func (c *Conn) RemoteAddr() net.Addr {
	switch sa := c.remote.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
	}
	return &net.TCPAddr{}
}

// SetDeadline and its two siblings do nothing: the socket never blocks.
func (c *Conn) SetDeadline(time.Time) error { return nil }

// SetReadDeadline does nothing (SetDeadline).
func (c *Conn) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline does nothing (SetDeadline).
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }

// SyscallConn gives the descriptor to Control; the connection keeps owning it.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return rawConn{c.fd}, nil }

// netConn turns c into a connection of Go's poller for net/http (a dup of the descriptor, then
// c's own closed). It is the slow path: requests the loop does not serve.
func (c *Conn) netConn() (net.Conn, error) {
	c.closed.Store(true)
	f := os.NewFile(uintptr(c.fd), "fastaccept")
	defer f.Close()
	return net.FileConn(f)
}

type rawConn struct{ fd int }

func (r rawConn) Control(f func(fd uintptr)) error { f(uintptr(r.fd)); return nil }

func (rawConn) Read(func(fd uintptr) bool) error  { return errors.ErrUnsupported }
func (rawConn) Write(func(fd uintptr) bool) error { return errors.ErrUnsupported }

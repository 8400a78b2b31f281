package likes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/pkg/sessiontoken"
)

// readBuffer is one connection's read buffer: it holds a whole answer head (about 200 bytes)
// many times over, and bounds a header line.
const readBuffer = 4096

// idleRedial is how long a connection may sit unused before it is redialled instead of reused:
// well under the shortest keep-alive idle timeout in front of a writer (haproxy's 10 s in
// compose/haproxy.cfg; the writer's own is 60 s), so nothing closes a connection just as a like is
// written on it. There is no background reader to notice that. Seen with 20 s through haproxy:
// the first like of each ramp step failed with "closed the connection before answering".
const idleRedial = 4 * time.Second

// dialPause is how long a connection's goroutine waits after a failed dial, so a writer that is
// down costs a few errors per connection and millisecond, not a spinning core.
const dialPause = 10 * time.Millisecond

// conn is one keep-alive HTTP/1.1 connection to the writer. One goroutine at a time uses it;
// between runs the Load keeps it idle.
type conn struct {
	nc       net.Conn        // nil before the first dial and after an error
	rc       syscall.RawConn // nc's descriptor, for Read's write-then-wait turn
	pending  []byte          // requests written by the next Read, before it reads
	readFD   func(uintptr) bool
	rd       rawRead
	br       *bufio.Reader // reads through the conn's own Read
	wbuf     []byte        // the requests of the batch being sent
	body     []byte        // the body of the answer being read
	lastUsed time.Time
	mint     *sessiontoken.Minter // WithSessions: signs this connection's likes
	user     []byte               // WithSessions: the user id being minted for
}

// ready dials c if it has no connection (or one idle too long) and sets the deadline of the
// exchange that starts at now.
func (c *conn) ready(ctx context.Context, l *Load, now time.Time) error {
	if c.nc != nil && now.Sub(c.lastUsed) > idleRedial {
		c.close()
	}
	if c.nc == nil {
		if err := c.dial(ctx, l); err != nil {
			time.Sleep(dialPause)
			return err
		}
	}
	c.lastUsed = now
	return c.nc.SetDeadline(now.Add(l.timeout))
}

func (c *conn) dial(ctx context.Context, l *Load) error {
	addr, err := l.address(ctx)
	if err != nil {
		return err
	}
	d := net.Dialer{Timeout: l.timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial writer: %w", err)
	}
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		_ = nc.Close()
		return fmt.Errorf("dial writer: %w", err)
	}
	c.nc, c.rc, c.pending = nc, rc, nil
	if c.readFD == nil {
		c.readFD = c.turn
	}
	if c.br == nil {
		c.br = bufio.NewReaderSize(c, readBuffer)
	} else {
		c.br.Reset(c)
	}
	return nil
}

// write sends b, all of it, with the read of its first answer: b stays in c.pending for Read.
// When the reader still holds bytes (a writer answering ahead, which is an error the read will
// report), Read would not be called first, so b is written at once.
func (c *conn) write(b []byte) error {
	if c.br.Buffered() > 0 {
		_, err := c.nc.Write(b)
		return err
	}
	c.pending = b
	return nil
}

// Read is the bufio.Reader's source. A request is written and its answer read in one turn of
// the poller: the descriptor's readiness is reset first (RawConn.Read does that before calling
// the function), then the request is written, and only then does the poller wait. So no read(2)
// is spent finding that the answer is not there yet (EAGAIN), which net.Conn's Write then Read
// always spend in a closed loop: a tenth of a like's cost to the generator. An answer that
// arrives before the wait still wakes it: the readiness it sets comes after the reset.
func (c *conn) Read(p []byte) (int, error) {
	c.rd = rawRead{p: p}
	if err := c.rc.Read(c.readFD); err != nil {
		return 0, err
	}
	n, err := c.rd.n, c.rd.err
	c.rd = rawRead{}
	switch {
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// rawRead is one Read's buffer and outcome, kept in the conn so that turn, bound once (readFD) at
// dial, allocates nothing per call.
type rawRead struct {
	p   []byte
	n   int
	err error
}

// turn is Read's turn on the descriptor: it writes what is pending and asks to wait, or reads.
// It returns false to wait for readability.
func (c *conn) turn(fd uintptr) bool {
	if len(c.pending) > 0 {
		w, err := ignoringEINTR(func() (int, error) { return unix.Write(int(fd), c.pending) })
		switch {
		case errors.Is(err, unix.EAGAIN): // a full send buffer: net.Conn waits for room
			w = 0
		case err != nil:
			c.rd.err = err
			return true
		}
		rest := c.pending[w:]
		c.pending = nil
		if len(rest) > 0 {
			if _, err := c.nc.Write(rest); err != nil {
				c.rd.err = err
				return true
			}
		}
		return false // wait for the answer
	}
	n, err := ignoringEINTR(func() (int, error) { return unix.Read(int(fd), c.rd.p) })
	if errors.Is(err, unix.EAGAIN) {
		return false
	}
	c.rd.n, c.rd.err = n, err
	return true
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, unix.EINTR) {
			return max(n, 0), err
		}
	}
}

// read reads the next answer; its body is in c.body until the next read.
func (c *conn) read() (answer, error) {
	a, body, err := readAnswer(c.br, c.body)
	c.body = body
	return a, err
}

// close drops the connection; the next exchange dials a new one.
func (c *conn) close() {
	if c.nc != nil {
		_ = c.nc.Close()
		c.nc, c.rc, c.pending = nil, nil, nil
	}
}

// exchangeError says what went wrong on an established connection while doing what (send or
// answer), in the terms of the like.
func exchangeError(what string, err error, timeout time.Duration) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("no answer within %v", timeout)
	case errors.Is(err, io.EOF):
		return errors.New("writer closed the connection before answering")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("writer closed the connection in the middle of an answer")
	}
	return fmt.Errorf("%s: %w", what, err)
}

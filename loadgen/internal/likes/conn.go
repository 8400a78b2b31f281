package likes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
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
	nc       net.Conn // nil before the first dial and after an error
	br       *bufio.Reader
	wbuf     []byte // the requests of the batch being sent
	body     []byte // the body of the answer being read
	lastUsed time.Time
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
	c.nc = nc
	if c.br == nil {
		c.br = bufio.NewReaderSize(nc, readBuffer)
	} else {
		c.br.Reset(nc)
	}
	return nil
}

// write sends b, all of it.
func (c *conn) write(b []byte) error {
	_, err := c.nc.Write(b)
	return err
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
		c.nc = nil
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

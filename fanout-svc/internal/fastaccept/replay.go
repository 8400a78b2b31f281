package fastaccept

import (
	"net"
	"syscall"
)

// replayConn is a connection handed to net/http after the loop read part of it: Read returns
// the bytes the loop read first, then reads the connection. Everything else is the connection's.
type replayConn struct {
	net.Conn
	buf []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		if len(c.buf) == 0 {
			c.buf = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// SyscallConn exposes the socket, so that a stream net/http hijacks from a replayed connection
// (one that came in on a keep-alive connection, say) can still be adopted by the hub's epoll.
// Bytes still buffered here are net/http's by then: a hijack takes its bufio.Reader, which has
// read them.
func (c *replayConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, syscall.EINVAL
	}
	return sc.SyscallConn()
}

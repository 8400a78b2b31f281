package redisconn

import (
	"context"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dialer returns go-redis's dial function with TCP_USER_TIMEOUT set: a connection whose sent
// data stays unacknowledged that long is aborted by the kernel. Without it a connection whose
// path vanished (the node's address changed, a network cut) looks alive for the ~15 minutes TCP
// retransmits: a pub/sub connection then hears nothing and is never resubscribed, while new
// connections to Redis work and the node reports itself ready.
func dialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	userTimeout := int(max(3*timeout, 5*time.Second) / time.Millisecond)
	d := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 5 * time.Second,
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, userTimeout)
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	return d.DialContext
}

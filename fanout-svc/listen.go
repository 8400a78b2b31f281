package main

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/pkg/serve"
)

// listen opens the node's listener with the socket options every viewer needs already on it, so
// that a connect pays for none of them (the node's CPU per connect is mostly
// syscalls, and each setsockopt is one):
//
//   - The send buffer (SO_SNDBUF, the hub's SendBuffer) is set on the listening socket; Linux
//     copies it, with its lock against autotuning, to every socket accepted from it, so the hub
//     needs no setsockopt of its own per viewer. Plain HTTP responses (the page, /metrics) get the
//     same buffer, which is plenty for them.
//   - TCP keep-alive is off (net would otherwise make four setsockopt calls per accept). It finds
//     nothing here: a stream carries a heartbeat at least every heartbeat interval, and the kernel
//     sends no keep-alive probe while data is in flight, so a dead viewer is found by its writes
//     (a reset, or the stall timeout) either way; an idle keep-alive HTTP client is closed by the
//     server's IdleTimeout, and a slow request head by ReadHeaderTimeout.
//   - Accept is deferred until the client has sent something (TCP_DEFER_ACCEPT, as nginx's
//     `deferred`), for up to the ReadHeaderTimeout: the request head comes with the connection,
//     so the loop that accepts it reads it at once and never watches the socket for it, and a
//     client that connects and sends nothing costs no descriptor meanwhile.
func listen(o serve.Options, sendBuffer int) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	deferSecs := max(1, int((o.ReadHeaderTimeout+time.Second-1)/time.Second))
	lc.Control = func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if sendBuffer > 0 {
				serr = epoll.SetSendBuffer(int(fd), sendBuffer)
			}
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, deferSecs)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
	ln, err := lc.Listen(context.Background(), "tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	return ln, nil
}

package main

import (
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/pkg/serve"
)

// TestListenerSocketsInheritSendBufferWithoutKeepAlive: a socket accepted from the node's
// listener already has the hub's send buffer (the hub sets none per viewer) and no keep-alive.
func TestListenerSocketsInheritSendBufferWithoutKeepAlive(t *testing.T) {
	const sendBuffer = 16 << 10
	ln, err := listen(serve.Options{Listen: "127.0.0.1:0"}, sendBuffer)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var sndbuf, keepAlive int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		sndbuf, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if gerr == nil {
			keepAlive, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		}
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if sndbuf != 2*sendBuffer { // Linux reports twice what was set (its bookkeeping overhead)
		t.Errorf("accepted socket's SO_SNDBUF = %d; want %d, inherited from the listener", sndbuf, 2*sendBuffer)
	}
	if keepAlive != 0 {
		t.Errorf("accepted socket has SO_KEEPALIVE = %d; want 0", keepAlive)
	}
}

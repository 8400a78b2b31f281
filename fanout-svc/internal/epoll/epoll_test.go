package epoll

import (
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair returns both ends of a loopback TCP connection and the server end's descriptor.
func pair(t *testing.T) (server, client net.Conn, fd int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	if fd, err = SocketFD(server); err != nil {
		t.Fatal(err)
	}
	return server, client, fd
}

func TestWakeEndsWait(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Wake()
	events := p.Wait(5000)
	if len(events) != 1 || !p.IsWake(&events[0]) {
		t.Fatalf("got %+v; want one wake event", events)
	}
	p.DrainWake()
	if events := p.Wait(0); len(events) != 0 {
		t.Errorf("after DrainWake got %+v; want nothing", events)
	}
}

func TestFullSocketIsNotAnError(t *testing.T) {
	_, _, fd := pair(t)
	if err := SetSendBuffer(fd, 4096); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8<<20) // more than any loopback buffer holds while the peer does not read
	n, err := Write(fd, b)
	if err != nil {
		t.Fatalf("write to a full socket: %v; want no error", err)
	}
	if n <= 0 || n >= len(b) {
		t.Errorf("wrote %d of %d bytes; want a partial write", n, len(b))
	}
}

func TestPeerCloseIsReported(t *testing.T) {
	_, client, fd := pair(t)
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Add(fd); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("ignored")); err != nil {
		t.Fatal(err)
	}
	client.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, ev := range p.Wait(100) {
			if int(ev.Fd) != fd {
				continue
			}
			buf := make([]byte, 16)
			if ev.Events&(Failed|In) != 0 && ReadDiscard(fd, buf) {
				return
			}
		}
	}
	t.Fatal("peer close never reported")
}

func TestSocketFDRejectsNonSockets(t *testing.T) {
	if _, err := SocketFD(struct{}{}); err == nil {
		t.Error("got a descriptor from a value that is no connection")
	}
}

// TestWaitParksInGosPoller: Wait parks in Go's poller (not in epoll_wait), ends at its timeout
// with nothing, and is woken by a Wake from another goroutine, or by a socket's event, while
// parked.
func TestWaitParksInGosPoller(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.raw == nil {
		t.Fatal("the epoll descriptor is not in Go's poller: Wait would block in epoll_wait")
	}
	start := time.Now()
	if events := p.Wait(30); len(events) != 0 || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("Wait(30) returned %+v after %v; want nothing after 30 ms", events, time.Since(start))
	}
	done := make(chan []Event)
	go func() { done <- p.Wait(-1) }() // returns when woken below
	// The goroutine may not have parked yet when Wake runs; either way the wake must end its Wait.
	p.Wake()
	if events := <-done; len(events) != 1 || !p.IsWake(&events[0]) {
		t.Fatalf("got %+v; want the wake", events)
	}
	p.DrainWake()

	_, client, fd := pair(t)
	if err := p.Add(fd); err != nil {
		t.Fatal(err)
	}
	p.Wait(0) // the writable edge of a new socket
	go func() { done <- p.Wait(10_000) }()
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	events := <-done
	if len(events) != 1 || int(events[0].Fd) != fd || events[0].Events&In == 0 {
		t.Fatalf("got %+v; want input on the socket", events)
	}
}

// TestAcceptReportsThePeer: Accept returns a non-blocking socket and the peer's address and
// port, as accept4 gave them.
func TestAcceptReportsThePeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lfd, err := SocketFD(ln)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var fd int
	var sa unix.Sockaddr
	var e syscall.Errno
	deadline := time.Now().Add(10 * time.Second)
	for { // ln's socket is non-blocking: the connection may not be queued yet
		if fd, sa, e = Accept(lfd); e != unix.EAGAIN || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	if e != 0 {
		t.Fatal(e)
	}
	defer func() { _ = RawClose(fd) }()
	local := c.LocalAddr().(*net.TCPAddr)
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok || in4.Port != local.Port || net.IP(in4.Addr[:]).String() != "127.0.0.1" {
		t.Errorf("peer %+v; want 127.0.0.1:%d", sa, local.Port)
	}
	if n, e := RawRead(fd, make([]byte, 1)); n != -1 || e != unix.EAGAIN {
		t.Errorf("read of a quiet socket: %d, %v; want EAGAIN (non-blocking)", n, e)
	}
}

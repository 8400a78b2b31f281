package hub

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// poller is a shard's epoll instance plus an eventfd that other goroutines use to wake it.
// Sockets are registered edge-triggered for input, output and peer hang-up: an output edge arrives
// only after a write found the socket full, so writable sockets cost no wake-ups at all.
type poller struct {
	epfd   int
	wakefd int
	events []unix.EpollEvent
}

const socketEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

func newPoller() (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	p := &poller{epfd: epfd, wakefd: wakefd, events: make([]unix.EpollEvent, 256)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}); err != nil {
		p.close()
		return nil, fmt.Errorf("epoll add eventfd: %w", err)
	}
	return p, nil
}

func (p *poller) add(fd int) error {
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: socketEvents, Fd: int32(fd)})
}

func (p *poller) remove(fd int) {
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

// wait blocks until events arrive or timeoutMs passes (-1: forever) and returns them.
func (p *poller) wait(timeoutMs int) []unix.EpollEvent {
	n, err := unix.EpollWait(p.epfd, p.events, timeoutMs)
	if err != nil || n <= 0 {
		return nil
	}
	return p.events[:n]
}

// wake makes a blocked wait return. Safe from any goroutine.
func (p *poller) wake() {
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(p.wakefd, one[:])
}

// drainWake consumes pending wake-ups.
func (p *poller) drainWake() {
	var buf [8]byte
	_, _ = unix.Read(p.wakefd, buf[:])
}

func (p *poller) close() {
	unix.Close(p.wakefd)
	unix.Close(p.epfd)
}

// writeNonBlocking writes b to a non-blocking socket and returns how much went out. A full socket
// is not an error (n < len(b), err nil); a closed or reset one is.
func writeNonBlocking(fd int, b []byte) (int, error) {
	written := 0
	for written < len(b) {
		n, err := unix.Write(fd, b[written:])
		if n > 0 {
			written += n
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return written, nil
		case err != nil:
			return written, err
		case n <= 0:
			return written, nil
		}
	}
	return written, nil
}

// readDiscard drains whatever the peer sent (viewers send nothing after the request) and reports
// whether the peer closed its side or the socket failed.
func readDiscard(fd int, buf []byte) (closed bool) {
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case n > 0:
			continue
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false
		default: // n == 0 (EOF) or a hard error
			return true
		}
	}
}

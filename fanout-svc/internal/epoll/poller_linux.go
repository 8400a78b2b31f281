package epoll

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Event is one readiness report of Wait: Fd is the descriptor, Events its flags.
type Event = unix.EpollEvent

// Flags of Event.Events.
const (
	In     = unix.EPOLLIN                                    // the peer sent something (or closed)
	Out    = unix.EPOLLOUT                                   // the socket drained and takes more
	Failed = unix.EPOLLERR | unix.EPOLLHUP | unix.EPOLLRDHUP // the socket failed or the peer hung up
)

// Poller is an epoll instance plus an eventfd that other goroutines use to wake it. Sockets are
// registered edge-triggered for input, output and peer hang-up: an output edge arrives only after
// a write found the socket full, so writable sockets cost no wake-ups at all. One goroutine calls
// Wait, Add and Remove; Wake is safe from any goroutine.
type Poller struct {
	epfd   int
	wakefd int
	events []unix.EpollEvent
}

const socketEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// New returns a poller; Close releases its descriptors.
func New() (*Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	p := &Poller{epfd: epfd, wakefd: wakefd, events: make([]unix.EpollEvent, 256)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}); err != nil {
		p.Close()
		return nil, fmt.Errorf("epoll add eventfd: %w", err)
	}
	return p, nil
}

// Add watches a socket.
func (p *Poller) Add(fd int) error {
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: socketEvents, Fd: int32(fd)})
}

// AddListener watches a listening socket for connections waiting to be accepted: level-triggered,
// so a loop that accepts only some of them is told again, and exclusive, so that of the loops
// watching one socket a connection wakes one (EPOLLEXCLUSIVE), not all of them.
func (p *Poller) AddListener(fd int) error {
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(fd)})
}

// Remove stops watching a socket.
func (p *Poller) Remove(fd int) {
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

// Wait blocks until events arrive or timeoutMs passes (-1: forever) and returns them. The slice
// is reused by the next Wait.
func (p *Poller) Wait(timeoutMs int) []Event {
	n, err := unix.EpollWait(p.epfd, p.events, timeoutMs)
	if err != nil || n <= 0 {
		return nil
	}
	return p.events[:n]
}

// IsWake reports whether ev is a Wake rather than a socket's event.
func (p *Poller) IsWake(ev *Event) bool { return int(ev.Fd) == p.wakefd }

// Wake makes a blocked Wait return. Safe from any goroutine.
func (p *Poller) Wake() {
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(p.wakefd, one[:])
}

// DrainWake consumes pending wake-ups.
func (p *Poller) DrainWake() {
	var buf [8]byte
	_, _ = unix.Read(p.wakefd, buf[:])
}

// Close releases the poller's descriptors. The sockets it watched stay open.
func (p *Poller) Close() {
	unix.Close(p.wakefd)
	unix.Close(p.epfd)
}

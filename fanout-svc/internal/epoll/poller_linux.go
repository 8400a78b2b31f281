package epoll

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

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
//
// Wait blocks in Go's own poller, not in epoll_wait: the epoll descriptor is itself registered
// there (an epoll instance is readable while it has events), and Wait parks its goroutine until it
// is, with a deadline for the timeout. A goroutine blocked in a system call keeps its thread and,
// after a while, makes the runtime's monitor take its P and wake another thread for it; on a node
// whose loop sleeps between connects, that hand-off was a sixth of the node's CPU per connect
// (with several nodes on one core, each connect waking one of them). Parked in the poller, an
// idle loop costs the runtime nothing, and a connect wakes it on the thread that polls.
type Poller struct {
	epfd   int
	wakefd int
	events []unix.EpollEvent
	file   *os.File        // owns epfd once park made it one (nil: epfd is closed as it is)
	raw    syscall.RawConn // file's, for parking in Go's poller; nil: Wait blocks in epoll_wait
	ready  int             // events the last try found
	try    func(uintptr) bool
	until  time.Time // the deadline set on file
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
	p.try = func(uintptr) bool {
		p.ready = p.waitNow()
		return p.ready > 0
	}
	p.park()
	return p, nil
}

// park registers the epoll descriptor with Go's poller. Where that fails (the descriptor cannot
// be made non-blocking, or Go does not poll it: no deadlines), Wait blocks in epoll_wait as it
// would in C.
func (p *Poller) park() {
	if unix.SetNonblock(p.epfd, true) != nil {
		return
	}
	f := os.NewFile(uintptr(p.epfd), "epoll") // owns epfd from here on: Close closes f
	p.file = f
	raw, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		_ = unix.SetNonblock(p.epfd, false)
		return
	}
	p.raw = raw
}

// waitNow returns the events ready now, without waiting.
func (p *Poller) waitNow() int {
	for {
		n, e := epollWaitNow(p.epfd, p.events)
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return 0
		}
		return n
	}
}

// Add watches a socket.
func (p *Poller) Add(fd int) error {
	return epollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: socketEvents, Fd: int32(fd)})
}

// AddListener watches a listening socket for connections waiting to be accepted: level-triggered,
// so a loop that accepts only some of them is told again, and exclusive, so that of the loops
// watching one socket a connection wakes one (EPOLLEXCLUSIVE), not all of them.
func (p *Poller) AddListener(fd int) error {
	return epollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(fd)})
}

// Remove stops watching a socket.
func (p *Poller) Remove(fd int) {
	_ = epollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

// Wait blocks until events arrive or timeoutMs passes (-1: forever) and returns them. The slice
// is reused by the next Wait.
func (p *Poller) Wait(timeoutMs int) []Event {
	if timeoutMs == 0 {
		return p.events[:p.waitNow()]
	}
	if p.raw == nil {
		n, err := unix.EpollWait(p.epfd, p.events, timeoutMs)
		if err != nil || n <= 0 {
			return nil
		}
		return p.events[:n]
	}
	var until time.Time
	if timeoutMs > 0 {
		until = time.Now().Add(time.Duration(timeoutMs) * time.Millisecond)
	}
	if !until.Equal(p.until) {
		_ = p.file.SetReadDeadline(until)
		p.until = until
	}
	p.ready = 0
	if err := p.raw.Read(p.try); err != nil && p.ready == 0 {
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			time.Sleep(time.Millisecond) // closed under us, or the poller failed: do not spin
		}
		return nil
	}
	return p.events[:p.ready]
}

// IsWake reports whether ev is a Wake rather than a socket's event.
func (p *Poller) IsWake(ev *Event) bool { return int(ev.Fd) == p.wakefd }

// Wake makes a blocked Wait return. Safe from any goroutine.
func (p *Poller) Wake() {
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	_, _ = RawWrite(p.wakefd, one[:])
}

// DrainWake consumes pending wake-ups.
func (p *Poller) DrainWake() {
	var buf [8]byte
	_, _ = RawRead(p.wakefd, buf[:])
}

// Close releases the poller's descriptors. The sockets it watched stay open.
func (p *Poller) Close() {
	unix.Close(p.wakefd)
	if p.file != nil {
		_ = p.file.Close()
		return
	}
	unix.Close(p.epfd)
}

package worker

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// readBufferDefault is the one buffer a loop reads every socket into: large, so a socket with
	// many frames queued is drained in one read(2).
	readBufferDefault = 64 << 10
	// loopTick bounds how long a loop sleeps in epoll_wait, so it notices handshake timeouts,
	// abandon and stop requests.
	loopTick = 50 * time.Millisecond
	// eventsPerWait is how many ready sockets one epoll_wait returns at most.
	eventsPerWait = 512
)

// handshake is a viewer being connected and when it must be open, on its loop's clock (loop.now):
// kept with the loop's list of handshakes rather than in every viewer for its whole life.
type handshake struct {
	v        *viewer
	deadline int64
}

// errTimeout is why a handshake that took too long failed.
var errTimeout = errors.New("timeout")

// loop reads viewers' sockets with one level-triggered epoll instance: per ready socket one
// read(2) into a shared buffer and a decode, with no goroutine per viewer, no read that ends in
// EAGAIN and no scheduler work per event. Only the loop's goroutine touches a registered
// viewer's fd and stream, and only it closes them.
type loop struct {
	w       *Worker
	epfd    int
	buf     []byte
	req     []byte // the request being sent (loop goroutine only)
	timeout time.Duration
	epoch   time.Time // the zero of now

	mu       sync.Mutex  // guards incoming
	incoming []handshake // registered since the last sweep

	pending  []handshake // still connecting or awaiting the head (loop goroutine only)
	byFD     []atomic.Pointer[viewer]
	abandon  atomic.Bool
	stop     atomic.Bool
	finished chan struct{}
}

func newLoop(w *Worker, maxFD int, readBuffer int, timeout time.Duration) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &loop{
		w: w, epfd: epfd, buf: make([]byte, readBuffer), timeout: timeout, epoch: time.Now(),
		byFD: make([]atomic.Pointer[viewer], maxFD), finished: make(chan struct{}),
	}, nil
}

// add registers a viewer whose socket fd is connecting. Called by the connector goroutine, which
// must not touch v after a successful add: from then on the loop owns it.
func (l *loop) add(v *viewer, fd int) error {
	if fd >= len(l.byFD) {
		return errors.New("file descriptor beyond the open-file limit")
	}
	v.fd = fd
	l.mu.Lock()
	l.incoming = append(l.incoming, handshake{v: v, deadline: l.now() + int64(l.timeout)})
	l.mu.Unlock()
	l.byFD[fd].Store(v) // publishes v to the loop
	ev := unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		// Never registered, so the loop cannot have seen it (the sweep skips it: not pending
		// once failed).
		l.byFD[fd].Store(nil)
		return err
	}
	return nil
}

// now is the loop's monotonic clock in nanoseconds.
func (l *loop) now() int64 { return int64(time.Since(l.epoch)) }

// run waits for ready sockets until stop is set, then closes every socket. It exits after stop.
func (l *loop) run() {
	defer close(l.finished)
	defer unix.Close(l.epfd)
	events := make([]unix.EpollEvent, eventsPerWait)
	lastSweep := time.Now()
	for !l.stop.Load() {
		n, err := unix.EpollWait(l.epfd, events, int(loopTick/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		for _, ev := range events[:max(n, 0)] {
			if v := l.byFD[ev.Fd].Load(); v != nil {
				l.ready(v, ev.Events)
			}
		}
		if time.Since(lastSweep) >= loopTick || l.abandon.Load() {
			l.sweep()
			lastSweep = time.Now()
		}
	}
	l.closeAll()
}

// ready handles one socket's readiness.
func (l *loop) ready(v *viewer, events uint32) {
	if !v.requested {
		l.connected(v)
		return
	}
	if events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
		return
	}
	n, err := unix.Read(v.fd, l.buf)
	switch {
	case n > 0:
		v.received(l.buf[:n])
	case n == 0 && err == nil:
		l.end(v, io.EOF)
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
	default:
		l.end(v, err)
	}
}

// connected runs when a connecting socket becomes writable: the connection is up (or failed);
// send the request and wait for the response.
func (l *loop) connected(v *viewer) {
	if soErr, err := unix.GetsockoptInt(v.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soErr != 0 {
		if err == nil {
			err = unix.Errno(soErr)
		}
		l.end(v, err)
		return
	}
	l.req = v.w.targets[v.node].appendRequest(l.req[:0], v.w.paths[v.post()])
	n, err := unix.Write(v.fd, l.req)
	if err == nil && n < len(l.req) {
		err = errors.New("short write of the request")
	}
	if err != nil {
		l.end(v, err)
		return
	}
	v.requested = true
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(v.fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, v.fd, &ev); err != nil {
		l.end(v, err)
	}
}

// end closes a viewer's socket and records why it ended.
func (l *loop) end(v *viewer, err error) {
	if v.fd < 0 {
		return
	}
	l.byFD[v.fd].Store(nil)
	unix.Close(v.fd) // also removes it from the epoll set
	v.fd = -1
	v.ended(err)
}

// sweep fails handshakes past their deadline (or all of them when abandoning) and forgets the
// viewers that are no longer pending.
func (l *loop) sweep() {
	l.mu.Lock()
	l.pending = append(l.pending, l.incoming...)
	l.incoming = l.incoming[:0]
	l.mu.Unlock()
	abandon := l.abandon.Swap(false)
	now := l.now()
	kept := l.pending[:0]
	for _, h := range l.pending {
		v := h.v
		if v.state.Load() != statePending || v.fd < 0 || l.byFD[v.fd].Load() != v {
			continue
		}
		if abandon || now > h.deadline {
			l.end(v, errTimeout)
			continue
		}
		kept = append(kept, h)
	}
	clear(l.pending[len(kept):])
	l.pending = kept
}

// closeAll closes every socket still registered.
func (l *loop) closeAll() {
	for fd := range l.byFD {
		if v := l.byFD[fd].Load(); v != nil {
			l.end(v, errors.New("worker closing"))
		}
	}
}

// shutdown stops the loop and waits for it to close its sockets.
func (l *loop) shutdown() {
	l.stop.Store(true)
	<-l.finished
}

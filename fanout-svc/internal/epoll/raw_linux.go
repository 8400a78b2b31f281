package epoll

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls of the loops' hot paths go through RawSyscall, not Syscall: each of them is on
// a non-blocking descriptor and returns without waiting, and a Syscall tells the runtime that the
// goroutine may block, which after a sysmon tick (20 µs) makes the runtime's monitor take the
// loop's P, hand it to another thread and wake that thread (a futex), and the loop's thread wait
// for a P again when the call returns. A write to a loopback socket runs the peer's receive path
// inside the call and lasts long enough for that: in the 100K ramp's profile the hand-offs and
// the monitor's wake-ups were a fifth of a node's CPU per connect. A raw call costs none of it;
// what it costs is that the P stays with the loop for the few microseconds of the call, which
// is what a loop on its own core wants anyway.

// Each returns the call's error number (0: none), not an error, so that callers compare it with
// unix.EAGAIN and friends without an interface in between.

// errno turns a raw call's error number into an error (nil for 0).
func errno(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// RawRead is read(2) on a non-blocking descriptor.
func RawRead(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(n), 0
}

// RawWrite is write(2) on a non-blocking descriptor.
func RawWrite(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(n), 0
}

// RawClose is close(2) of a socket no one else uses.
func RawClose(fd int) error {
	_, _, e := unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
	return errno(e)
}

// Accept is accept4(2) on a non-blocking listening socket: a new non-blocking, close-on-exec
// socket and the peer's address (IPv4 or IPv6; nil for any other family).
func Accept(fd int) (int, unix.Sockaddr, syscall.Errno) {
	var rsa unix.RawSockaddrAny
	size := uint32(unix.SizeofSockaddrAny)
	nfd, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&size)),
		unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, nil, e
	}
	switch rsa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(&rsa))
		port := (*[2]byte)(unsafe.Pointer(&p.Port))
		return int(nfd), &unix.SockaddrInet4{Port: int(port[0])<<8 | int(port[1]), Addr: p.Addr}, 0
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(&rsa))
		port := (*[2]byte)(unsafe.Pointer(&p.Port))
		return int(nfd), &unix.SockaddrInet6{Port: int(port[0])<<8 | int(port[1]), ZoneId: p.Scope_id, Addr: p.Addr}, 0
	}
	return int(nfd), nil, 0
}

// epollCtl is epoll_ctl(2).
func epollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	return errno(e)
}

// epollWaitNow is epoll_pwait(2) with a timeout of 0: the events ready now.
func epollWaitNow(epfd int, events []unix.EpollEvent) (int, syscall.Errno) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

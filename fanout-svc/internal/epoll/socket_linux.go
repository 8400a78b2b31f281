package epoll

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Write writes b to a non-blocking socket and returns how much went out. A full socket is not an
// error (n < len(b), err nil); a closed or reset one is.
func Write(fd int, b []byte) (int, error) {
	written := 0
	for written < len(b) {
		n, e := RawWrite(fd, b[written:])
		if n > 0 {
			written += n
		}
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return written, nil
		case e != 0:
			return written, e
		case n <= 0:
			return written, nil
		}
	}
	return written, nil
}

// ReadDiscard drains whatever the peer sent (viewers send nothing after the request) and reports
// whether the peer closed its side or the socket failed.
func ReadDiscard(fd int, buf []byte) (closed bool) {
	for {
		n, e := RawRead(fd, buf)
		switch {
		case n > 0:
			continue
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return false
		default: // n == 0 (EOF) or a hard error
			return true
		}
	}
}

// SetSendBuffer sets a socket's kernel send buffer (SO_SNDBUF) to bytes.
func SetSendBuffer(fd, bytes int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, bytes)
}

var errNotSocket = errors.New("connection has no file descriptor")

// SocketFD returns the descriptor of a hijacked TCP connection. The connection keeps owning it:
// the caller writes to it directly and closes it through the connection.
func SocketFD(c any) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, errNotSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := raw.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return -1, err
	}
	return fd, nil
}

package worker

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// target is where a viewer connects and the request it sends.
type target struct {
	addr    string // host:port
	request []byte // the whole GET request
}

// newTargets builds one target per (node, post): the request bytes are built once and shared.
func newTargets(nodes, posts []string) ([][]target, error) {
	out := make([][]target, len(nodes))
	for n, raw := range nodes {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Scheme != "http" {
			return nil, errors.New("fanout node URL must be http://host:port: " + raw)
		}
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
		base := strings.TrimSuffix(u.Path, "/")
		out[n] = make([]target, len(posts))
		for p, post := range posts {
			req := "GET " + base + "/sse/" + post + " HTTP/1.1\r\nHost: " + u.Host +
				"\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\nUser-Agent: likes-loadgen\r\n\r\n"
			out[n][p] = target{addr: addr, request: []byte(req)}
		}
	}
	return out, nil
}

// newDialer returns a dialer bound to source (empty: the kernel's choice). With a source address
// the port is left to connect(2) (IP_BIND_ADDRESS_NO_PORT), so each source address offers its full
// port range to every destination instead of one shared range.
func newDialer(source string, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: -1}
	if source == "" {
		return d
	}
	d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	d.Control = func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		})
		return errors.Join(err, serr)
	}
	return d
}

// dial connects and sends the request.
func dial(ctx context.Context, d *net.Dialer, t target) (net.Conn, error) {
	conn, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(t.request); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// reason names an error for the failure summary: the errno when there is one ("connection
// refused", "too many open files"), otherwise the error's text, without addresses.
func reason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

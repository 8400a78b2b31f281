package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// target is a fanout node that viewers connect to.
type target struct {
	addr netip.AddrPort
	base string // the node URL's path, without a trailing slash
	host string // the Host header's value
}

// newTargets returns one target per node, resolving each node's host once.
func newTargets(ctx context.Context, nodes []string) ([]target, error) {
	out := make([]target, len(nodes))
	for n, raw := range nodes {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Scheme != "http" {
			return nil, errors.New("fanout node URL must be http://host:port: " + raw)
		}
		addr, err := resolve(ctx, u)
		if err != nil {
			return nil, err
		}
		out[n] = target{addr: addr, base: strings.TrimSuffix(u.Path, "/"), host: u.Host}
	}
	return out, nil
}

// appendRequest appends the GET request of stream path on t. A loop builds each request into its
// own buffer as the viewer's socket connects: built ahead, one per node and post in every worker,
// the requests took more memory than the viewers themselves at a million viewers (56 nodes times
// 1,000 posts, about 14 MB a worker).
func (t *target) appendRequest(b []byte, path string) []byte {
	b = append(b, "GET "...)
	b = append(b, t.base...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, t.host...)
	return append(b, "\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\nUser-Agent: likes-loadgen\r\n\r\n"...)
}

// streamPaths returns, for each post p, the stream path of a viewer whose first post is posts[p].
// With feed > 1 the stream follows feed posts from the first on, wrapping around, on one
// /sse?posts= stream.
func streamPaths(posts []string, feed int) []string {
	out := make([]string, len(posts))
	for p := range posts {
		out[p] = streamPath(posts, p, feed)
	}
	return out
}

// streamPath is the stream of a viewer whose first post is posts[first].
func streamPath(posts []string, first, feed int) string {
	if feed <= 1 {
		return "/sse/" + posts[first]
	}
	ids := make([]string, feed)
	for k := range ids {
		ids[k] = posts[(first+k)%len(posts)]
	}
	return "/sse?posts=" + strings.Join(ids, ",")
}

func resolve(ctx context.Context, u *url.URL) (netip.AddrPort, error) {
	port := u.Port()
	if port == "" {
		port = "80"
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: %w", u.Host, err)
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: no address", u.Host)
	}
	ip := ips[0]
	for _, a := range ips {
		if a.Unmap().Is4() {
			ip = a
			break
		}
	}
	pn, err := net.LookupPort("tcp", port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(pn)), nil
}

// parseSources turns source addresses into IPs.
func parseSources(sources []string) ([]netip.Addr, error) {
	out := make([]netip.Addr, 0, len(sources))
	for _, s := range sources {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("source address %q: %w", s, err)
		}
		out = append(out, a.Unmap())
	}
	return out, nil
}

// openSocket creates a non-blocking TCP socket, binds it to source when one is given, and starts
// connecting to dst; the connection completes (or fails) when the socket becomes writable. With a
// source address the port is left to connect(2) (IP_BIND_ADDRESS_NO_PORT), so each source address
// offers its full port range to every destination instead of one range shared by all.
func openSocket(source netip.Addr, dst netip.AddrPort) (int, error) {
	family := unix.AF_INET
	if dst.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := bindAndConnect(fd, source, dst); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func bindAndConnect(fd int, source netip.Addr, dst netip.AddrPort) error {
	if source.IsValid() {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err != nil {
			return err
		}
		if err := unix.Bind(fd, sockaddr(netip.AddrPortFrom(source, 0))); err != nil {
			return err
		}
	}
	err := unix.Connect(fd, sockaddr(dst))
	if err != nil && !errors.Is(err, unix.EINPROGRESS) {
		return err
	}
	return nil
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

// reason names an error for the failure summary: the errno when there is one ("connection
// refused", "too many open files"), otherwise the error's text, without addresses.
func reason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
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

package clientip

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver tells a request's client address. The zero Resolver trusts no proxy. It is read on
// every request (and on fanout-svc's fast accept path for every viewer), so it takes no lock and
// allocates nothing.
type Resolver struct {
	Trusted []netip.Prefix // proxies whose X-Forwarded-For is believed
	Names   *Names         // and those named by host name; nil: none
}

// Addr returns the client address of r: the peer's, or, when the peer is a trusted proxy, the
// right-most X-Forwarded-For hop that is not one. A hop that does not parse ends the walk at the
// last trusted address, since anything left of it may have been written by the client. The zero
// Addr means RemoteAddr was not an IP address (a Unix socket, a test).
func (c Resolver) Addr(r *http.Request) netip.Addr {
	return c.From(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
}

// From is Addr for a request read without net/http (fanout-svc's SSE fast path): remote in
// RemoteAddr form and the request's X-Forwarded-For lines.
//
// Every X-Forwarded-For line counts, as one comma-separated list (RFC 9110 5.3): haproxy adds its
// own line after a client's rather than appending to it, so reading only the first line would
// believe whatever the client wrote. The hops are walked in place, right to left, rather than
// joined and split, so that the walk allocates nothing.
func (c Resolver) From(remote string, forwarded []string) netip.Addr {
	peer := Peer(remote)
	if !c.Trusts(peer) || len(forwarded) == 0 {
		return peer
	}
	for i := len(forwarded) - 1; i >= 0; i-- {
		rest := forwarded[i]
		for {
			comma := strings.LastIndexByte(rest, ',')
			a, err := netip.ParseAddr(strings.TrimSpace(rest[comma+1:]))
			if err != nil {
				return peer
			}
			a = a.Unmap()
			if !c.Trusts(a) {
				return a
			}
			peer = a
			if comma < 0 {
				break
			}
			rest = rest[:comma]
		}
	}
	return peer
}

// Trusts reports whether a is one of the trusted proxies.
func (c Resolver) Trusts(a netip.Addr) bool {
	for _, p := range c.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return c.Names != nil && c.Names.Contains(a)
}

// Peer is the address of a RemoteAddr ("host:port", or a bare host), unmapped; the zero Addr when
// it is not an IP address.
func Peer(hostport string) netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// Source names the client behind a for a per-client limit: an IPv4 address as itself, an IPv6
// address by its /64, because one subscriber usually holds a whole /64 and would otherwise get a
// fresh allowance per address. The zero Addr is "unknown", one shared bucket.
func Source(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is4() {
		return a.String()
	}
	return SourcePrefix(a).String()
}

// SourcePrefix is the client Source names, as a prefix: an IPv4 address's /32, an IPv6 address's
// /64, the zero Prefix for the zero Addr. It allocates nothing, for a map key on a hot path
// (fanout-svc's per-address stream cap).
func SourcePrefix(a netip.Addr) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	bits := 64
	if a.Is4() {
		bits = 32
	}
	p, _ := a.Prefix(bits) // cannot fail for a valid address and these lengths
	return p
}

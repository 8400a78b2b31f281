package stream

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
)

// perSource counts viewers per client address so that one address cannot take a node's every
// slot. The address is the peer's, or the first untrusted hop of X-Forwarded-For when the peer is
// a configured proxy.
type perSource struct {
	max     int
	trusted []netip.Prefix

	mu     sync.Mutex
	counts map[netip.Addr]int
}

func newPerSource(max int, trusted []netip.Prefix) *perSource {
	return &perSource{max: max, trusted: trusted, counts: make(map[netip.Addr]int)}
}

// source is where a stream comes from as its request says, whichever entry point read it: the
// peer's address (RemoteAddr form) and the request's X-Forwarded-For lines.
type source struct {
	remote    string
	forwarded []string
}

// sourceOf is a net/http request's source.
func sourceOf(r *http.Request) source {
	return source{remote: r.RemoteAddr, forwarded: r.Header.Values("X-Forwarded-For")}
}

// limited reports whether acquire reads the source at all: without a limit an entry point need
// not gather one.
func (p *perSource) limited() bool { return p.max > 0 }

// acquire counts one viewer for src. It returns a release func, or false when the source is at
// its limit.
func (p *perSource) acquire(src source) (func(), bool) {
	if p.max <= 0 {
		return nil, true
	}
	addr := p.source(src)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts[addr] >= p.max {
		return nil, false
	}
	p.counts[addr]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.counts[addr]--; p.counts[addr] <= 0 {
				delete(p.counts, addr)
			}
		})
	}, true
}

func (p *perSource) source(src source) netip.Addr {
	peer := addrOf(src.remote)
	if !p.isTrusted(peer) {
		return peer
	}
	// Every X-Forwarded-For line counts, as one list (RFC 9110 5.3): haproxy adds its own line
	// after a client's rather than appending to it, so reading only the first line would believe
	// whatever the client wrote.
	hops := strings.Split(strings.Join(src.forwarded, ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer
		}
		if !p.isTrusted(a.Unmap()) {
			return a.Unmap()
		}
		peer = a.Unmap()
	}
	return peer
}

func (p *perSource) isTrusted(a netip.Addr) bool {
	for _, pr := range p.trusted {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

func addrOf(hostport string) netip.Addr {
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

// ParsePrefixes parses trusted proxy addresses or CIDR prefixes.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, err
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		pr, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, pr.Masked())
	}
	return out, nil
}

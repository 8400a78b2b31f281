package stream

import (
	"net/http"
	"net/netip"
	"sync"

	"github.com/likes/likes/pkg/clientip"
)

// perSource counts viewers per client, a quota per client, so that one client cannot take all of
// a node's admissions. The client is its address (the peer's, or the first untrusted hop of
// X-Forwarded-For when the peer is a configured proxy) grouped as the writer groups it
// (clientip.Source): an IPv4 address alone, an IPv6 address by its /64, since one subscriber
// usually holds a whole /64 and would otherwise get a fresh quota per address.
type perSource struct {
	max     int
	clients clientip.Resolver

	mu     sync.Mutex
	counts map[netip.Prefix]int
}

func newPerSource(max int, clients clientip.Resolver) *perSource {
	return &perSource{max: max, clients: clients, counts: make(map[netip.Prefix]int)}
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

// source is the client a stream is counted under: its address's clientip.SourcePrefix.
func (p *perSource) source(src source) netip.Prefix {
	return clientip.SourcePrefix(p.clients.From(src.remote, src.forwarded))
}

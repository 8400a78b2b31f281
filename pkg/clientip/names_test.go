package clientip

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"

	"go.uber.org/zap"
)

// fakeDNS answers lookups from a table a test changes; a name without an entry fails.
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
}

func (f *fakeDNS) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.answers[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return append([]netip.Addr(nil), a...), nil
}

func (f *fakeDNS) set(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if addrs == nil {
		delete(f.answers, host)
		return
	}
	f.answers[host] = nil
	for _, a := range addrs {
		f.answers[host] = append(f.answers[host], netip.MustParseAddr(a))
	}
}

// TestNamedProxiesFollowTheirAddresses: a proxy named by host name is trusted at every address
// the name has, and at its new one once it moves (a recreated balancer); a failed lookup keeps
// the last addresses; a name that never resolved trusts nothing; addresses and CIDRs still work.
func TestNamedProxiesFollowTheirAddresses(t *testing.T) {
	dns := &fakeDNS{answers: map[string][]netip.Addr{}}
	dns.set("haproxy", "172.18.0.5", "::ffff:172.18.0.6")
	r, err := ParseTrusted([]string{"haproxy", "10.0.0.0/8", "balancer.other"}, dns.lookup)
	if err != nil {
		t.Fatal(err)
	}
	client := func(peer string) string { return r.From(peer+":1234", []string{"198.51.100.7"}).String() }
	if got := client("172.18.0.5"); got != "172.18.0.5" {
		t.Errorf("before the first refresh, a named proxy's client is %s; want the peer itself", got)
	}
	r.Names.Refresh(context.Background(), zap.NewNop())
	for peer, want := range map[string]string{
		"172.18.0.5": "198.51.100.7", "172.18.0.6": "198.51.100.7", "10.1.2.3": "198.51.100.7", "172.18.0.9": "172.18.0.9",
	} {
		if got := client(peer); got != want {
			t.Errorf("peer %s: client %s; want %s", peer, got, want)
		}
	}
	dns.set("haproxy", "172.18.0.9")
	r.Names.Refresh(context.Background(), zap.NewNop())
	if client("172.18.0.9") != "198.51.100.7" || client("172.18.0.5") != "172.18.0.5" {
		t.Error("after the balancer moved, its new address is not trusted or its old one still is")
	}
	dns.set("haproxy")
	r.Names.Refresh(context.Background(), zap.NewNop())
	if client("172.18.0.9") != "198.51.100.7" {
		t.Error("a failed lookup dropped the name's last addresses")
	}
}

// TestNamedProxyThroughTheSystemResolver: "localhost", resolved by the machine's resolver, makes
// a request from 127.0.0.1 with X-Forwarded-For read through; without it, it is not.
func TestNamedProxyThroughTheSystemResolver(t *testing.T) {
	r, err := ParseTrusted([]string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := r.Start(context.Background(), zap.NewNop())
	defer stop()
	if got := r.From("127.0.0.1:4000", []string{"203.0.113.9"}); got.String() != "203.0.113.9" {
		t.Errorf("TRUSTED_PROXIES=localhost, peer 127.0.0.1: client %s; want 203.0.113.9", got)
	}
	if got := (Resolver{}).From("127.0.0.1:4000", []string{"203.0.113.9"}); got.String() != "127.0.0.1" {
		t.Errorf("no trusted proxy: client %s; want the peer", got)
	}
}

func TestParseTrustedSortsEntries(t *testing.T) {
	r, err := ParseTrusted([]string{"10.0.0.1", "fd00::/8", "haproxy", "ingress.ingress-nginx.svc.cluster.local"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trusted) != 2 || r.Names == nil || len(r.Names.hosts) != 2 {
		t.Errorf("got %d prefixes and names %v; want 2 and 2", len(r.Trusted), r.Names)
	}
	for _, bad := range []string{"10.0.0.300", "10.0.0.0/33", "-bad-", "a..b", "under_score"} {
		if _, err := ParseTrusted([]string{bad}, nil); err == nil {
			t.Errorf("ParseTrusted(%q): no error", bad)
		}
	}
}

// BenchmarkTrustsNamed: deciding whether a peer is a named proxy allocates nothing (the fast
// accept path asks it for every viewer).
func BenchmarkTrustsNamed(b *testing.B) {
	dns := &fakeDNS{answers: map[string][]netip.Addr{}}
	dns.set("haproxy", "172.18.0.5", "172.18.0.6")
	r, _ := ParseTrusted([]string{"haproxy"}, dns.lookup)
	r.Names.Refresh(context.Background(), zap.NewNop())
	fwd := []string{"198.51.100.7"}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.From("172.18.0.6:1234", fwd)
	}
	if n := testing.AllocsPerRun(100, func() { _ = r.Trusts(netip.MustParseAddr("172.18.0.6")) }); n != 0 {
		b.Errorf("Trusts allocates %v times; want 0", n)
	}
}

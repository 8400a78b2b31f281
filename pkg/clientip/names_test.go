package clientip

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeDNS answers lookups from a table a test changes; a name without an entry fails. With
// answered set, each lookup reports the answer it gave there (or gives up when its context ends),
// so that a test can await a refresh instead of sleeping.
type fakeDNS struct {
	mu       sync.Mutex
	answers  map[string][]netip.Addr
	answered chan []netip.Addr
}

func newFakeDNS() *fakeDNS { return &fakeDNS{answers: map[string][]netip.Addr{}} }

func (f *fakeDNS) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	a, ok := f.answers[host]
	a = slices.Clone(a)
	answered := f.answered
	f.mu.Unlock()
	if answered != nil {
		select {
		case answered <- a:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if !ok {
		return nil, errors.New("no such host")
	}
	return a, nil
}

// set makes host resolve to addrs; without addrs, it fails to resolve.
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

// report makes every later lookup report its answer on the returned channel.
func (f *fakeDNS) report() <-chan []netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered = make(chan []netip.Addr)
	return f.answered
}

// TestNamedProxiesFollowTheirAddresses: a proxy named by host name is trusted at every address
// the name has, and at its new one once it moves (a recreated balancer); a failed lookup keeps
// the last addresses; a name that never resolved trusts nothing; addresses and CIDRs still work.
func TestNamedProxiesFollowTheirAddresses(t *testing.T) {
	dns := newFakeDNS()
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

// TestStartResolvesAgain: once started, the names are resolved again every Interval by the
// started goroutine, so that a balancer that moves is followed without a restart; stop ends that
// goroutine (goleak checks).
func TestStartResolvesAgain(t *testing.T) {
	dns := newFakeDNS()
	dns.set("haproxy", "172.18.0.5")
	r, err := ParseTrusted([]string{"haproxy"}, dns.lookup)
	if err != nil {
		t.Fatal(err)
	}
	r.Names.Interval = time.Millisecond
	stop := r.Start(context.Background(), zap.NewNop())
	defer stop()
	if !r.Trusts(netip.MustParseAddr("172.18.0.5")) {
		t.Fatal("Start returned before the first resolution")
	}
	answered := dns.report()
	dns.set("haproxy", "172.18.0.9")
	await := func(what string) []netip.Addr {
		t.Helper()
		select {
		case a := <-answered:
			return a
		case <-time.After(10 * time.Second):
			t.Fatalf("no lookup %s", what)
			return nil
		}
	}
	moved := []netip.Addr{netip.MustParseAddr("172.18.0.9")}
	for seen := false; !seen; { // lookups that began before the move still answer the old address
		seen = slices.Equal(await("after the balancer moved"), moved)
	}
	// One name: the next lookup starts after the refresh that saw the move has published it.
	await("after the refresh that saw the move")
	if !r.Trusts(netip.MustParseAddr("172.18.0.9")) || r.Trusts(netip.MustParseAddr("172.18.0.5")) {
		t.Error("after a refresh, the moved balancer's new address is not trusted or its old one still is")
	}
}

// TestFailuresWarnOnce: a name that does not resolve warns once, not every Interval, until it
// resolves again; a change of its addresses is logged at info; a lookup cut short by shutdown is
// not a warning.
func TestFailuresWarnOnce(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	dns := newFakeDNS()
	r, err := ParseTrusted([]string{"haproxy"}, dns.lookup)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	count := func(level zapcore.Level) int {
		return logs.FilterLevelExact(level).Len()
	}
	r.Names.Refresh(ctx, log) // the balancer is not up yet
	r.Names.Refresh(ctx, log)
	if count(zapcore.WarnLevel) != 1 || count(zapcore.InfoLevel) != 0 {
		t.Errorf("name not resolving at start, twice: %d warnings, %d infos; want 1 and 0", count(zapcore.WarnLevel), count(zapcore.InfoLevel))
	}
	dns.set("haproxy", "172.18.0.5")
	r.Names.Refresh(ctx, log)
	r.Names.Refresh(ctx, log)
	if got := logs.FilterMessage("trusted proxy name resolved").Len(); got != 1 {
		t.Errorf("the name resolved, the same twice: %d change logs; want 1", got)
	}
	dns.set("haproxy")
	r.Names.Refresh(ctx, log)
	r.Names.Refresh(ctx, log)
	if count(zapcore.WarnLevel) != 2 {
		t.Errorf("the name failed again, twice: %d warnings in all; want 2", count(zapcore.WarnLevel))
	}
	if !r.Trusts(netip.MustParseAddr("172.18.0.5")) {
		t.Error("failures dropped the name's last addresses")
	}
	dns.set("haproxy", "172.18.0.5")
	r.Names.Refresh(ctx, log)
	dns.set("haproxy")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	r.Names.Refresh(canceled, log)
	if count(zapcore.WarnLevel) != 2 {
		t.Errorf("a lookup cut short by shutdown warned: %d warnings in all; want 2", count(zapcore.WarnLevel))
	}
}

// TestNamedProxyThroughTheSystemResolver: TRUSTED_PROXIES=localhost, resolved by the machine's
// resolver (127.0.0.1 and/or ::1), makes a request from 127.0.0.1 with X-Forwarded-For read
// through; with TRUSTED_PROXIES unset, it is not.
func TestNamedProxyThroughTheSystemResolver(t *testing.T) {
	for _, tt := range []struct {
		trusted []string
		want    string
	}{
		{[]string{"localhost"}, "203.0.113.9"},
		{nil, "127.0.0.1"},
	} {
		r, err := ParseTrusted(tt.trusted, nil)
		if err != nil {
			t.Fatal(err)
		}
		stop := r.Start(context.Background(), zap.NewNop())
		got := r.From("127.0.0.1:4000", []string{"203.0.113.9"})
		stop()
		if got.String() != tt.want {
			t.Errorf("TRUSTED_PROXIES=%q, peer 127.0.0.1, X-Forwarded-For 203.0.113.9: client %s; want %s", tt.trusted, got, tt.want)
		}
	}
}

// BenchmarkTrustsNamed: telling the client behind a named proxy allocates nothing (the fast
// accept path asks it for every viewer).
func BenchmarkTrustsNamed(b *testing.B) {
	dns := newFakeDNS()
	dns.set("haproxy", "172.18.0.5", "172.18.0.6")
	r, err := ParseTrusted([]string{"haproxy"}, dns.lookup)
	if err != nil {
		b.Fatal(err)
	}
	r.Names.Refresh(context.Background(), zap.NewNop())
	fwd := []string{"198.51.100.7"}
	want := netip.MustParseAddr("198.51.100.7")
	b.ReportAllocs()
	for b.Loop() {
		if r.From("172.18.0.6:1234", fwd) != want {
			b.Fatal("wrong client")
		}
	}
}

// TestReadingNamesAllocatesNothing: the benchmarks' 0 allocs/op, asserted on every test run.
func TestReadingNamesAllocatesNothing(t *testing.T) {
	dns := newFakeDNS()
	dns.set("haproxy", "172.18.0.5", "172.18.0.6")
	r, err := ParseTrusted([]string{"haproxy", "10.0.0.0/8"}, dns.lookup)
	if err != nil {
		t.Fatal(err)
	}
	r.Names.Refresh(context.Background(), zap.NewNop())
	fwd := []string{"6.6.6.6, 198.51.100.7", "10.9.9.9"}
	if n := testing.AllocsPerRun(100, func() { _ = r.From("172.18.0.6:1234", fwd) }); n != 0 {
		t.Errorf("From allocates %v times; want 0", n)
	}
}

package clientip

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultRefresh is how often Names resolves its hosts again unless its Interval says otherwise: a
// balancer recreated by its platform (a Compose service, a Kubernetes Pod) comes back under a new
// address, and is trusted again within this long.
const DefaultRefresh = 10 * time.Second

// lookupTimeout bounds one host's lookup, so that an unanswering DNS server delays neither the
// start (the first resolution) nor the next refresh for long.
const lookupTimeout = 5 * time.Second

// Lookup resolves a host name to its addresses: net.DefaultResolver's LookupNetIP in production, a
// fake in tests.
type Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

// Names are trusted proxies given by host name. Every address a name resolves to is trusted (a
// name with several A/AAAA records: several balancer replicas). The set is resolved again every
// Interval; a failed resolution keeps the name's last good addresses, since a DNS hiccup should
// not make the balancer's clients one client, and a name that has not resolved yet trusts
// nothing. Contains, asked on every request, reads an immutable snapshot through an atomic
// pointer: no lock, no allocation.
type Names struct {
	// Interval is how often the names are resolved again; 0: DefaultRefresh. Set it before Start.
	Interval time.Duration

	hosts  []string
	lookup Lookup
	set    atomic.Pointer[[]netip.Addr] // every host's last good addresses; replaced, never changed

	// Only the refreshing goroutine (Refresh, then Run) touches these.
	last    map[string][]netip.Addr // each host's last good answer, sorted; absent: never resolved
	failing map[string]bool         // hosts whose last lookup failed, so that a failure warns once
}

// NewNames returns Names for hosts, resolved by lookup (nil: the system's resolver, which follows
// /etc/hosts and the search domains, so that Compose's and Kubernetes' short names resolve).
// Nothing is trusted until the first Refresh.
func NewNames(hosts []string, lookup Lookup) *Names {
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	n := &Names{hosts: hosts, lookup: lookup, last: make(map[string][]netip.Addr, len(hosts)), failing: make(map[string]bool)}
	n.set.Store(&[]netip.Addr{})
	return n
}

// Contains reports whether a is an address of one of the names, as last resolved.
func (n *Names) Contains(a netip.Addr) bool {
	return slices.Contains(*n.set.Load(), a)
}

// Refresh resolves every host once and publishes the new set. A host whose addresses changed is
// logged at info; one whose lookup failed keeps its last addresses and is logged at warn, once
// until it resolves again, rather than every Interval. A lookup cut short by ctx (shutdown) is
// not logged. Refresh is not safe for concurrent use: one goroutine refreshes.
func (n *Names) Refresh(ctx context.Context, log *zap.Logger) {
	all := make([]netip.Addr, 0, len(*n.set.Load()))
	for _, h := range n.hosts {
		n.resolve(ctx, h, log)
		all = append(all, n.last[h]...)
	}
	n.set.Store(&all)
}

// resolve looks host up once and records its answer in last.
func (n *Names) resolve(ctx context.Context, host string, log *zap.Logger) {
	lookupCtx, cancel := context.WithTimeout(ctx, lookupTimeout)
	addrs, err := n.lookup(lookupCtx, host)
	cancel()
	if err != nil {
		if ctx.Err() != nil || n.failing[host] {
			return
		}
		n.failing[host] = true
		log.Warn("trusted proxy name does not resolve; trusting its last addresses until it does",
			zap.String("name", host), zap.Stringers("addresses", n.last[host]), zap.Error(err))
		return
	}
	if n.failing[host] {
		delete(n.failing, host)
		log.Info("trusted proxy name resolves again", zap.String("name", host))
	}
	addrs = slices.Clone(addrs)
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	if old, seen := n.last[host]; !seen || !slices.Equal(addrs, old) {
		log.Info("trusted proxy name resolved", zap.String("name", host), zap.Stringers("addresses", addrs),
			zap.Stringers("previous", old))
		n.last[host] = addrs
	}
}

// Run refreshes every Interval until ctx ends. Start runs it, after a first Refresh.
func (n *Names) Run(ctx context.Context, log *zap.Logger) {
	every := n.Interval
	if every <= 0 {
		every = DefaultRefresh
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.Refresh(ctx, log)
		}
	}
}

// Start resolves the names once, so that the balancer is trusted from the first request when it
// is up (when it is not, the failure is only logged: it may start after this service), then keeps
// them fresh in a goroutine until stop is called or ctx ends; stop waits for that goroutine. The
// service's run calls Start once and stop on its way out.
func (n *Names) Start(ctx context.Context, log *zap.Logger) (stop func()) {
	n.Refresh(ctx, log)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // owned by stop
		defer close(done)
		n.Run(ctx, log)
	}()
	return func() {
		cancel()
		<-done
	}
}

// Start starts r's Names (Names.Start); without names it does nothing and stop is a no-op.
func (r Resolver) Start(ctx context.Context, log *zap.Logger) (stop func()) {
	if r.Names == nil {
		return func() {}
	}
	return r.Names.Start(ctx, log)
}

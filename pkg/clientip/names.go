package clientip

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultRefresh is how often Names resolves its hosts again: a balancer recreated by its platform
// (a Compose service, a Kubernetes Pod) comes back under a new address, and is trusted again
// within this long.
const DefaultRefresh = 10 * time.Second

// Lookup resolves a host name to its addresses: net.DefaultResolver's LookupNetIP in production.
type Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

// Names are trusted proxies given by host name, so that a deployment can name its balancer (the
// Compose service `haproxy`, a headless Service) rather than trust the whole private address
// space, in which any container or pod could then forge X-Forwarded-For. Every address a name
// resolves to is trusted; the set is resolved again every Refresh, and a failed resolution keeps
// the last set it had. Reading it (Contains) takes no lock and allocates nothing.
type Names struct {
	hosts  []string
	lookup Lookup
	set    atomic.Pointer[[]netip.Addr]
	last   map[string][]netip.Addr // each host's last good answer; only refresh touches it
}

// NewNames returns Names for hosts, resolved by lookup (nil: the system's resolver). Nothing is
// trusted until the first Refresh.
func NewNames(hosts []string, lookup Lookup) *Names {
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	n := &Names{hosts: hosts, lookup: lookup, last: make(map[string][]netip.Addr, len(hosts))}
	n.set.Store(&[]netip.Addr{})
	return n
}

// Contains reports whether a is an address of one of the names, as last resolved.
func (n *Names) Contains(a netip.Addr) bool {
	return slices.Contains(*n.set.Load(), a)
}

// Refresh resolves every host once. A host whose answer changed is logged at info, one that
// failed at warn (keeping its last answer); a host that never resolved yet is trusted for no
// address: its balancer may start after this service.
func (n *Names) Refresh(ctx context.Context, log *zap.Logger) {
	var all []netip.Addr
	for _, h := range n.hosts {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := n.lookup(ctx, h)
		cancel()
		switch {
		case err != nil:
			log.Warn("trusted proxy name did not resolve; keeping its last addresses", zap.String("name", h),
				zap.Int("addresses", len(n.last[h])), zap.Error(err))
		default:
			for i := range addrs {
				addrs[i] = addrs[i].Unmap()
			}
			slices.SortFunc(addrs, netip.Addr.Compare)
			addrs = slices.Compact(addrs)
			if !slices.Equal(addrs, n.last[h]) {
				log.Info("trusted proxy name resolved", zap.String("name", h), zap.Stringers("addresses", addrs))
				n.last[h] = addrs
			}
		}
		all = append(all, n.last[h]...)
	}
	n.set.Store(&all)
}

// Run refreshes every interval (DefaultRefresh when 0) until ctx ends. The caller refreshes once
// first, before serving.
func (n *Names) Run(ctx context.Context, every time.Duration, log *zap.Logger) {
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

// ParseTrusted parses TRUSTED_PROXIES: addresses, CIDR prefixes and host names. The names, when
// there are any, are in the Resolver's Names, which its owner refreshes (Refresh, then Run).
func ParseTrusted(list []string, lookup Lookup) (Resolver, error) {
	var r Resolver
	var prefixes, hosts []string
	for _, s := range list {
		if isHostName(s) {
			hosts = append(hosts, s)
		} else {
			prefixes = append(prefixes, s)
		}
	}
	var err error
	if r.Trusted, err = ParsePrefixes(prefixes); err != nil {
		return Resolver{}, err
	}
	if len(hosts) > 0 {
		r.Names = NewNames(hosts, lookup)
	}
	return r, nil
}

// isHostName reports whether s reads as a DNS host name (labels of letters, digits and hyphens,
// not all digits at the end, so that an address with a typo is not taken for a name).
func isHostName(s string) bool {
	if s == "" || len(s) > 253 || strings.ContainsAny(s, ":/") {
		return false
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		if strings.IndexFunc(l, notHostChar) >= 0 {
			return false
		}
	}
	last := labels[len(labels)-1]
	return strings.IndexFunc(last, func(c rune) bool { return c < '0' || c > '9' }) >= 0
}

// notHostChar reports whether c cannot be in a host name's label.
func notHostChar(c rune) bool {
	return (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-'
}

// Start resolves r's names once and then keeps them fresh in a goroutine until stop is called or
// ctx ends; stop waits for it. Without names it does nothing.
func (r Resolver) Start(ctx context.Context, log *zap.Logger) (stop func()) {
	if r.Names == nil {
		return func() {}
	}
	r.Names.Refresh(ctx, log)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // owned by stop
		defer close(done)
		r.Names.Run(ctx, 0, log)
	}()
	return func() {
		cancel()
		<-done
	}
}

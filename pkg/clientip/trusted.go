package clientip

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseTrusted parses TRUSTED_PROXIES: addresses ("10.0.0.1"), CIDR prefixes ("10.0.0.0/8") and
// host names ("haproxy", "lb.ingress.svc.cluster.local"). Names let a deployment trust its
// balancer, whose address the platform assigns, rather than the whole private address space, in
// which any container or pod could then forge X-Forwarded-For. The names, when there are any, are
// the Resolver's Names, resolved by lookup (nil: the system's resolver); they trust nothing until
// the Resolver's owner starts them (Start). An entry that is none of the three is an error, so
// that a typo in an address is not taken for a name that never resolves.
func ParseTrusted(list []string, lookup Lookup) (Resolver, error) {
	var r Resolver
	var hosts []string
	for _, s := range list {
		if p, ok := parsePrefix(s); ok {
			r.Trusted = append(r.Trusted, p)
			continue
		}
		if !isHostName(s) {
			return Resolver{}, fmt.Errorf("%q is neither an address, a CIDR prefix nor a host name", s)
		}
		hosts = append(hosts, s)
	}
	if len(hosts) > 0 {
		r.Names = NewNames(hosts, lookup)
	}
	return r, nil
}

// ParsePrefixes parses a list of addresses ("10.0.0.1", a one-address prefix) and CIDR prefixes
// ("10.0.0.0/8"), without host names.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, ok := parsePrefix(s)
		if !ok {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePrefix reads an address as its one-address prefix (unmapped, as Peer unmaps the peer) and
// a CIDR prefix as its masked form.
func parsePrefix(s string) (netip.Prefix, bool) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err == nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}

// isHostName reports whether s reads as a DNS host name (RFC 1123: labels of letters, digits and
// inner hyphens, an optional final dot), with a last label that is not all digits, so that an
// address with a typo ("10.0.0.300") is refused rather than taken for a name.
func isHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.IndexFunc(l, notHostChar) >= 0 {
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

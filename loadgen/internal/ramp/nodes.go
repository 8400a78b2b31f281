package ramp

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
)

// ResolveNodes turns the --fanout list into one base URL per node. A single URL whose host name
// resolves to several addresses (how Docker Compose and a headless Kubernetes service expose
// scaled replicas) becomes one URL per address, so viewers are spread over every replica.
func ResolveNodes(ctx context.Context, raw []string) ([]string, error) {
	for _, r := range raw {
		if u, err := url.Parse(r); err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("URL %q: want http://host:port", r)
		}
	}
	if len(raw) != 1 {
		return raw, nil
	}
	u, _ := url.Parse(raw[0])
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return raw, nil
	}
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve host %s: %w", host, err)
	}
	addrs = preferIPv4(addrs)
	if len(addrs) < 2 {
		return raw, nil
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		v := *u
		v.Host = net.JoinHostPort(a, port)
		out = append(out, v.String())
	}
	return out, nil
}

// preferIPv4 keeps the IPv4 addresses when there are any, so "localhost" (127.0.0.1 and ::1) is one
// node, not two names for the same one; the result is sorted and without duplicates.
func preferIPv4(addrs []string) []string {
	var v4 []string
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			v4 = append(v4, a)
		}
	}
	if len(v4) > 0 {
		addrs = v4
	}
	addrs = slices.Clone(addrs)
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

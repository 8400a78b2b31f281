package routes

import (
	"slices"
	"strings"
)

// internal are the path prefixes that only the cluster may reach. /healthz and /readyz are for
// the kubelet and the balancer's health checks (which call the pods directly, not through a
// frontend), /metrics is for Prometheus inside the network, and /admin is for operators. Their
// answers describe the node (Redis reachability, viewer counts, runtime figures), /readyz costs a
// Redis round trip, and an admin endpoint changes state: an outside caller gets none of them.
var internal = []string{"/healthz", "/readyz", "/metrics", "/admin"}

// Internal returns the path prefixes that must never be routed from outside, each covering the
// paths under it (see Within).
func Internal() []string { return slices.Clone(internal) }

// Public reports whether a route may be routed from outside: whether its pattern (a chi pattern
// such as "/like/{postID}", or a request path) lies within none of the Internal prefixes.
func Public(pattern string) bool {
	return !slices.ContainsFunc(internal, func(p string) bool { return Within(pattern, p) })
}

// Within reports whether path is prefix or lies under it, compared element by element as
// Kubernetes compares a Prefix path: "/admin" and "/admin/users" are within "/admin",
// "/administrators" is not. A trailing slash on prefix is ignored, so every absolute path is
// within "/".
func Within(path, prefix string) bool {
	p := strings.TrimSuffix(prefix, "/")
	return path == p || strings.HasPrefix(path, p+"/")
}

// Package clientip finds the address a request came from, for per-client limits. The peer's
// address is the answer unless the peer is a configured proxy: only then is X-Forwarded-For read,
// from the right, skipping hops that are themselves trusted proxies, so that a client cannot
// choose its own address by sending the header to a writer that no proxy stands in front of.
//
// Proxies are configured (TRUSTED_PROXIES, ParseTrusted) as addresses, CIDR prefixes or host
// names. A name is how a deployment says "the balancer" when the platform assigns its address
// (Compose's haproxy service, a Kubernetes Service): trusting it instead of all private address
// space keeps other containers from forging the header. Names are resolved at start and again
// periodically (Names), and the request path reads the current addresses without a lock.
package clientip

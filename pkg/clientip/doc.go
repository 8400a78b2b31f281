// Package clientip finds the address a request came from, for per-client limits. The peer's
// address is the answer unless the peer is a configured proxy: only then is X-Forwarded-For read,
// from the right, skipping hops that are themselves trusted proxies, so that a client cannot
// choose its own address by sending the header to a writer that no proxy stands in front of.
package clientip

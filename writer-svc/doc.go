// Command writer-svc is the write side of likes: a stateless HTTP service that records likes and
// unlikes in Redis and publishes each change to the post's channel, from which every fanout node
// delivers it to viewers. It scales by running more replicas behind a load balancer.
//
// Each change is one Lua script (dedup with SET NX, INCR or DECR, a per-post version, PUBLISH)
// run in a single atomic round trip, so a like is stored and announced exactly once, and a client
// that retries after a timeout or a 503 can never count twice.
//
// Identity: without AUTH_JWT_SECRET or AUTH_JWKS_URL the writer trusts the X-User-ID header, so it
// must sit behind a gateway that authenticates users and sets that header, and must never be
// exposed directly: anyone who can reach it could like in any user's name. With either setting it
// requires a bearer JWT and takes the user from the token's `sub` claim.
//
// Run `writer-svc --help` for every flag and its environment variable.
package main

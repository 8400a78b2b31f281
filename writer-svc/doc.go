// Command writer-svc is the write side of likes: a stateless HTTP service that records likes and
// unlikes in Redis and publishes the post's new count to its channel, from which every fanout node
// delivers it to viewers. It scales by running more replicas behind a load balancer.
//
// Changes are stored by one Lua script (dedup keys, the count, a per-post version, PUBLISH) run in
// a single atomic round trip, so a like is stored and announced exactly once, and a client that
// retries after a timeout or a 503 can never count twice. Likes and unlikes of a post that arrive
// while a call for that post is in flight are coalesced into its next call (BATCH_SIZE,
// BATCH_WINDOW): one script call and one publish for many likes of a viral post, while a like of a
// quiet post goes at once.
//
// Identity, one mode chosen at start: by default only the writer's own session tokens
// (POST /session) name a user, so a writer anyone can reach still lets nobody like in another
// user's name. With AUTH_JWT_SECRET or AUTH_JWKS_URL it requires a bearer JWT and takes the user
// from the token's `sub` claim. With TRUST_USER_HEADER it believes the X-User-ID header, so it
// must sit behind a gateway that authenticates users and sets that header, and must never be
// exposed directly. Session tokens are accepted besides in the other two modes while sessions are
// on; contradictory or empty settings refuse to start.
//
// Run `writer-svc --help` for every flag and its environment variable.
package main

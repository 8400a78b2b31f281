// Package like stores, counts and publishes likes. One Lua script per change does the dedup, the
// count, the post's version and the publish in a single atomic round trip, so a like is either
// wholly recorded and announced or not at all, and a retried request can never count twice.
// The HTTP handlers map requests to the store and every failure to one status.
package like

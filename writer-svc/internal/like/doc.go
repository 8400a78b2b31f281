// Package like stores, counts and publishes likes. One Lua script call does the dedup, the count,
// the post's version and the publish of a batch of changes in a single atomic round trip, so a
// like is either wholly recorded and announced or not at all, and a retried request can never
// count twice. The Coalescer groups each post's concurrent likes and unlikes into those batches
// (group commit), while every request keeps its own answer. The HTTP handlers map requests to
// the coalescer and the store, and every failure to one status.
package like

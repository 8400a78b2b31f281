// Package store stores, counts and publishes likes and reactions in Redis. One Lua script call
// does the dedup, the count, the post's version, the likers list and the publish of a batch of
// changes in a single atomic round trip, so a change is either wholly recorded and announced or
// not at all, and a retried call never counts twice. The store also waits for replicas to confirm
// a batch when asked (ack.go) and follows a Redis Cluster's MOVED, ASK and TRYAGAIN while a hash
// slot moves (redirect.go); run.go is the one call to Redis that ties these together.
package store

// Package relay is the fanout node's side of Redis pub/sub: one subscription per post with local
// viewers, shared pub/sub connections, snapshots of counts, and resynchronisation after Redis
// drops the connection (pub/sub delivers at most once and replays nothing, so after a reconnect
// the relay re-reads every subscribed post and hands the hub anything newer).
//
// On one Redis server the relay uses classic SUBSCRIBE over one connection. On a Redis Cluster it
// uses sharded pub/sub (SSUBSCRIBE, matching the writer's SPUBLISH): one connection per master
// node, each post's channel on the node that owns its hash slot, and slots moved back where they
// belong when a node reports that they moved or comes back after a failure.
//
// Only posts that exist (they have a version: a like or a reaction gave them one) get a channel.
// The viewers of a post that does not exist wait in the relay's memory, and the relay listens to
// the one channel on which the like script announces each post's creation (classic pub/sub, on a
// Cluster too, where a PUBLISH reaches every node); hearing a post its viewers wait on, it
// subscribes to the post's channel and re-reads the post. So streams of made-up posts cost Redis
// nothing (created.go).
//
// Messages are handed to the hub without blocking. go-redis's PubSub.Channel() would block its
// reader for up to a minute when its buffer fills and then drop, stalling every post on the
// connection; the relay reads with ReceiveTimeout instead and never waits on a consumer.
package relay

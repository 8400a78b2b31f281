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
// Messages are handed to the hub without blocking. go-redis's PubSub.Channel() would block its
// reader for up to a minute when its buffer fills and then drop, stalling every post on the
// connection; the relay reads with ReceiveTimeout instead and never waits on a consumer.
package relay

// Package rediskeys is the one place that names Redis keys and channels, because the writer
// (which stores and publishes) and every fanout node (which subscribes and reads snapshots) must
// agree on the scheme byte for byte.
//
// Every key of a post carries the post id as a hash tag ({42}), so that a post's counter, version,
// dedup keys and channel live on one Redis Cluster slot: the like script stays single-slot and
// sharded pub/sub (SPUBLISH) is served by the shard that owns the post.
package rediskeys

import (
	"strconv"
	"strings"
)

// DefaultPrefix is prepended to every key unless configured otherwise.
const DefaultPrefix = "likes:"

// Scheme builds keys under one prefix.
type Scheme struct {
	Prefix string
}

// New returns a Scheme with prefix, or DefaultPrefix when prefix is empty.
func New(prefix string) Scheme {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Scheme{Prefix: prefix}
}

func (s Scheme) post(postID, suffix string) string {
	var b strings.Builder
	b.Grow(len(s.Prefix) + len(postID) + len(suffix) + 2)
	b.WriteString(s.Prefix)
	b.WriteByte('{')
	b.WriteString(postID)
	b.WriteByte('}')
	b.WriteString(suffix)
	return b.String()
}

// Count is the post's like counter (a string INCR/DECR'd by the like script).
func (s Scheme) Count(postID string) string { return s.post(postID, ":count") }

// Version is the post's change version: strictly increasing per post, and close to the Redis
// server's clock in unix microseconds (max(previous+1, TIME)). It orders updates of one post and
// is the `ts` of every published update.
func (s Scheme) Version(postID string) string { return s.post(postID, ":ver") }

// User is the dedup key that records that userID likes postID. It holds the number of the likers
// chunk (Likers) that lists the user.
func (s Scheme) User(postID, userID string) string { return s.post(postID, ":u:"+userID) }

// Likers is one chunk of the post's likers: a list of user ids in the order their likes were
// stored. Chunks are numbered from 0 and fill one after the other (the like script
// caps each near 128), so the highest holds the newest likers.
func (s Scheme) Likers(postID string, chunk int64) string {
	return s.post(postID, ":lk:"+strconv.FormatInt(chunk, 10))
}

// LikersChunk holds the number of the post's current likers chunk, the one new likes go to
// (absent: 0).
func (s Scheme) LikersChunk(postID string) string { return s.post(postID, ":lkc") }

// Reactions is the post's reaction counts: a hash of kind to count (HINCRBY'd by the like
// script), beside its like count in its slot.
func (s Scheme) Reactions(postID string) string { return s.post(postID, ":rx") }

// ReactionGate exists while userID may not react to postID again: the like script sets it with
// the reaction interval as its expiry (SET PX NX), so it is both the rate limit and its
// Retry-After (PTTL).
func (s Scheme) ReactionGate(postID, userID string) string { return s.post(postID, ":rg:"+userID) }

// Timeline is one minute of one series of the post's timeline: a string of big-endian unsigned
// 32-bit counters, one per second of the minute that starts at minute x 60 unix seconds (the like
// script adds to them with BITFIELD INCRBY u32 #<second>), which expires TIMELINE_RETENTION after
// the minute ends. A key per minute, not per hour: Redis grows a string to twice what a write
// needs, so an hour's key touched once at its end would hold 28 KB, a minute's holds at most 480
// bytes. series is TimelineLikes, TimelineUnlikes or a reaction kind (kinds are validated like
// post ids, so neither name can be one).
func (s Scheme) Timeline(postID, series string, minute int64) string {
	return s.post(postID, ":tl:"+series+":"+strconv.FormatInt(minute, 10))
}

// The timeline's series of likes stored and of likes removed (Timeline).
const (
	TimelineLikes   = "+like"
	TimelineUnlikes = "-like"
)

// UserLikes is the user's index of likes: a sorted set of the posts the user likes, scored by when
// (unix microseconds). It has no post hash tag: on a Cluster it lives in its own slot, apart from
// the posts it names.
func (s Scheme) UserLikes(userID string) string { return s.Prefix + "user-likes:" + userID }

// Batch remembers, for a few seconds, the results of one like batch of the post (batchID is the
// writer's id for that call), so that a batch Redis runs twice (a client retry after a lost
// reply) answers the first run's results instead of applying itself again.
func (s Scheme) Batch(postID, batchID string) string { return s.post(postID, ":b:"+batchID) }

// Epoch holds "<replication id> <epoch>": the primary that last stored a change and the epoch it
// stored it in (package epoch). One key per Redis: on a Cluster no script could touch it with a
// post's keys, and Cluster versions have no epoch.
func (s Scheme) Epoch() string { return s.Prefix + "epoch" }

// ReadBarrier is the key a writer sets before WAIT to confirm a read (store.ConfirmRead): the
// write makes WAIT cover everything the primary held when the read ran. PostReadBarrier is the
// same in the post's hash slot, for the master that serves the post on a Cluster.
func (s Scheme) ReadBarrier() string { return s.Prefix + "read-barrier" }

// PostReadBarrier: see ReadBarrier.
func (s Scheme) PostReadBarrier(postID string) string { return s.post(postID, ":rb") }

// RateLimit is the per-user like-rate counter (userID is "user:post" with LIKE_RATE_PER_POST).
// It has no post hash tag: it belongs to the user.
func (s Scheme) RateLimit(userID string) string { return s.Prefix + "rate:" + userID }

// LikeAddrRate is the like-rate counter of one client address (an IPv4 address or an IPv6 /64),
// shared by every user behind it. No hash tag: it belongs to no post.
func (s Scheme) LikeAddrRate(source string) string { return s.Prefix + "addr-rate:" + source }

// NewPostRate is the token bucket of the new posts one user ("u:<user>") or one client address
// ("a:<address>") may bring into existence with likes and reactions (NEW_POST_RATE).
func (s Scheme) NewPostRate(id string) string { return s.Prefix + "new-post-rate:" + id }

// DataAddrRate is the token bucket of a client address's reads and erasures of user data: a
// post's likers, a user's likes, their erasure (USER_DATA_ADDR_RATE).
func (s Scheme) DataAddrRate(source string) string { return s.Prefix + "data-rate:" + source }

// SessionRefreshRate is the token bucket of a client address's session refreshes
// (SESSION_REFRESH_RATE).
func (s Scheme) SessionRefreshRate(source string) string {
	return s.Prefix + "session:refresh-rate:" + source
}

// SessionKey is one signing key of the writer's session tokens, named by its key id (the unix
// second its rotation period began). The first writer to need a period's key creates it (SET NX)
// with an expiry past the last moment a token it signed can be refreshed, so every replica signs
// with the same key without an operator configuring one, and old keys remove themselves.
func (s Scheme) SessionKey(kid string) string { return s.Prefix + "session:key:" + kid }

// SessionRate is the counter of sessions issued to one client address (an IPv4 address or an
// IPv6 /64) in the current window. Like RateLimit it has no hash tag: it belongs to no post.
func (s Scheme) SessionRate(source string) string { return s.Prefix + "session:rate:" + source }

// Channel is the pub/sub channel that carries the post's updates.
func (s Scheme) Channel(postID string) string { return s.post(postID, ":ch") }

// Created is the one channel on which the like script announces each post's creation (its first
// change: the post had no Version key), with the post id as the message. A fanout node keeps no
// Redis state for the viewers of a post that does not exist: it listens here, with one
// subscription, and subscribes to the post's Channel only once the post exists, so that viewers of
// made-up posts cost Redis nothing. It is classic pub/sub, also on a Redis Cluster, where a
// PUBLISH reaches every node's subscribers (posts come into existence at most NEW_POST_RATE, so
// this is little traffic). The script derives it from the post's Channel, which it is given as a
// key: the prefix, then "created".
func (s Scheme) Created() string { return s.Prefix + "created" }

// Watching is the total number of viewers of the post across all fanout nodes during one
// watching interval: every node with local viewers adds its own number (INCRBY) once per
// interval, under the interval's index (unix time / interval), and the key expires a few intervals
// later. Readers read the interval before the current one, which every node has finished adding
// to. A node that stops adding (it died, its viewers left) is absent from the next interval's
// total: nobody has to remove its share.
func (s Scheme) Watching(postID string, interval int64) string {
	return s.post(postID, ":w:"+strconv.FormatInt(interval, 10))
}

// PostFromChannel returns the post id of a channel built by Channel, and false for any other name.
func (s Scheme) PostFromChannel(channel string) (string, bool) {
	rest, ok := strings.CutPrefix(channel, s.Prefix+"{")
	if !ok {
		return "", false
	}
	postID, ok := strings.CutSuffix(rest, "}:ch")
	if !ok || postID == "" {
		return "", false
	}
	return postID, true
}

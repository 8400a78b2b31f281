package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/writer-svc/internal/ratelimit"
)

// Result is the outcome of a like, an unlike or a reaction.
type Result struct {
	Count   int64 // the post's count after the call; for a reaction, its kind's count
	Changed bool  // false for a repeated like, an unlike of a post not liked, a refused reaction
	// RetryAfter is how long a refused reaction's user must wait before the post takes another
	// reaction of theirs (the reaction interval's rest), or how long the bucket that refused a
	// like or an unlike (Limited) stays empty; 0 otherwise.
	RetryAfter time.Duration
	// Limited is which of the change's Limits refused it, 1 or 2 (0: none did). It then changed
	// nothing.
	Limited int
	// Waits are how long each of the change's Limits stays empty after its call (0: it has room,
	// or it is zero), for its caller to settle (ratelimit.Bucket.Settle).
	Waits [2]time.Duration
	// Version is, for a reaction, the post's version after its batch (the ts of the update that
	// carried it), or 0 when the batch changed nothing. Likes leave it 0: their callers have not
	// needed it.
	Version int64
}

// Change is one like, or with Unlike one unlike, or with Kind one reaction of that kind, of a
// post by User.
type Change struct {
	User   string
	Unlike bool
	Kind   string // a reaction: counted once per ReactionInterval per user and post
	// Limits are rate limit buckets a like or an unlike spends a token of in its own script call
	// (limits.go), the client address's first; zero buckets are none. Only on one Redis
	// (Store.SpendsLimits): on a Cluster the buckets live in other slots than the post.
	Limits [2]ratelimit.Bucket
}

// ErrExpired is a batch that Redis refused because its deadline had passed when Redis came to
// it: nothing changed, and no later run of the same call can change anything.
var ErrExpired = errors.New("like batch past its deadline")

// errReply is a script reply of the wrong shape: the script ran, but its results are unknown.
var errReply = errors.New("like script: malformed reply")

// ClockSkew is how far the writer's clock may run ahead of Redis'. The script refuses a batch
// once Redis' clock passes its deadline less ClockSkew, so that even with clocks that far apart
// it never applies a batch after the writer, on its own clock, has answered its callers 503.
// NTP keeps hosts of one site within a few milliseconds of each other.
const ClockSkew = 25 * time.Millisecond

// undatedTimeout bounds a batch whose context has no deadline (tests, tools): the script needs a
// deadline to refuse late runs, and such a caller waits for the answer whatever it is.
const undatedTimeout = 10 * time.Second

// Store keeps likes in Redis.
type Store struct {
	rdb     redis.UniversalClient
	keys    rediskeys.Scheme
	publish string
	cluster bool // the users' indexes live in other slots: kept from outside the script
	acks    int
	ackFn   func() int // when set, asked per batch in place of acks
	grace   time.Duration
	every   time.Duration // a user's reactions to one post: at most one per every
	chunks  chunkCache
	offset  func() time.Duration // Redis' clock less this writer's (Options.ClockOffset)
	skew    time.Duration        // tests only: how far this writer's clock runs ahead of the true time
	keep    int64                // seconds a post's timeline is kept past its minute; 0: no timeline
	// emptyTTL is Options.EmptyPostTTL in milliseconds, the script's argument (0: never).
	emptyTTL int64
	// barriers share the read barriers of concurrent reads (ConfirmRead); Close stops them.
	barriers *barriers
	// late publishes the states of batches their replicas confirmed too late (late.go).
	late *late
}

// Options tune a Store.
type Options struct {
	// Cluster sends changes out with SPUBLISH, because a classic PUBLISH is copied to every node
	// of a cluster, and keeps the users' indexes of likes outside the script (clusterindex.go).
	Cluster bool
	// AckReplicas is how many replicas must confirm a batch (WAIT) before its changes are
	// answered; 0 answers once the primary has them. See ack.go.
	AckReplicas int
	// Acks, when set, is asked before each batch in place of AckReplicas (ackquorum.Quorum's
	// Replicas: every replica a majority of the Sentinels does not call down).
	Acks func() int
	// IndexGrace bounds how long a like may still land after its user's index entry was written
	// (the longest a like request may take, plus margin): on a Cluster an index entry of a post
	// the user does not like is removed only once it is older (clusterindex.go). 0 means
	// DefaultIndexGrace.
	IndexGrace time.Duration
	// ReactionInterval is how often a user may react to one post (any kind); 0 means
	// DefaultReactionInterval.
	ReactionInterval time.Duration
	// ClockOffset, when set, tells how far Redis' clock is ahead of this writer's (negative when
	// behind), as measured: a batch's deadline is sent in Redis' clock, so that a batch answered 503
	// on this writer's clock can never run later on Redis' whatever the skew. nil: the clocks are
	// taken to agree within ClockSkew.
	ClockOffset func() time.Duration
	// TimelineRetention is how long each minute of a post's timeline (its likes and reactions per
	// second, rediskeys.Timeline) is kept after the minute ends; 0 keeps none.
	TimelineRetention time.Duration
	// EmptyPostTTL is how long the keys of a post left at count 0 with no reactions live before
	// they expire (changeScript, Empty posts); 0 keeps them for ever.
	EmptyPostTTL time.Duration
	// ReadBarrierGap is the least time between two read barriers on one primary (barriers); 0:
	// the next starts as soon as the one in flight ends.
	ReadBarrierGap time.Duration
}

// DefaultReactionInterval is Options.ReactionInterval's default: one reaction per person
// every 3 s.
const DefaultReactionInterval = 3 * time.Second

// DefaultIndexGrace is Options.IndexGrace's default: the writer's default 2 s request
// timeout and a second of margin (the writer passes its own timeout plus that second).
const DefaultIndexGrace = 3 * time.Second

// New returns a Store. Close stops the read barriers it runs (ConfirmRead).
func New(rdb redis.UniversalClient, keys rediskeys.Scheme, o Options) *Store {
	publish := "PUBLISH"
	if o.Cluster {
		publish = "SPUBLISH"
	}
	if o.IndexGrace <= 0 {
		o.IndexGrace = DefaultIndexGrace
	}
	if o.ReactionInterval <= 0 {
		o.ReactionInterval = DefaultReactionInterval
	}
	return &Store{rdb: rdb, keys: keys, publish: publish, cluster: o.Cluster, acks: o.AckReplicas, ackFn: o.Acks, grace: o.IndexGrace,
		every: o.ReactionInterval, offset: o.ClockOffset, keep: int64(o.TimelineRetention / time.Second),
		emptyTTL: o.EmptyPostTTL.Milliseconds(),
		barriers: newBarriers(max(o.ReadBarrierGap, 0)), late: newLate()}
}

// Load puts the script in Redis' script cache, so requests run it with EVALSHA. After a Redis
// restart empties the cache, go-redis falls back to EVAL once, which reloads it.
func (s *Store) Load(ctx context.Context) error {
	if err := changeScript.Load(ctx, s.rdb).Err(); err != nil {
		return fmt.Errorf("load like script: %w", err)
	}
	return nil
}

// SpendsLimits reports whether a change's rate limit buckets (Change.Limits) can ride in its own
// script call: on one Redis, not on a Cluster, where they live in other slots than the post.
func (s *Store) SpendsLimits() bool { return !s.cluster }

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return redisconn.Ping(ctx, s.rdb)
}

// Like records that user likes post, once.
func (s *Store) Like(ctx context.Context, post, user string) (Result, error) {
	return s.one(ctx, post, Change{User: user})
}

// Unlike removes user's like of post, if any.
func (s *Store) Unlike(ctx context.Context, post, user string) (Result, error) {
	return s.one(ctx, post, Change{User: user, Unlike: true})
}

// React counts one reaction of kind to post by user, unless user reacted to post less than the
// reaction interval ago (Result.RetryAfter). kind is not checked here: the handler takes only
// configured kinds.
func (s *Store) React(ctx context.Context, post, user, kind string) (Result, error) {
	return s.one(ctx, post, Change{User: user, Kind: kind})
}

func (s *Store) one(ctx context.Context, post string, c Change) (Result, error) {
	res, err := s.Apply(ctx, post, []Change{c})
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// Count returns post's like count, 0 for a post never liked.
func (s *Store) Count(ctx context.Context, post string) (int64, error) {
	n, err := s.rdb.Get(ctx, s.keys.Count(post)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get count: %w", err)
	}
	return n, nil
}

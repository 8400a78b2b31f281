package like

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/rediskeys"
)

// Result is the outcome of a like or an unlike.
type Result struct {
	Count   int64 // the post's count after the call
	Changed bool  // false for a repeated like or an unlike of a post not liked
}

// Change is one like, or with Unlike one unlike, of a post by User.
type Change struct {
	User   string
	Unlike bool
}

// ErrExpired is a batch that Redis refused because its deadline had passed when Redis came to
// it: nothing changed, and no later run of the same call can change anything.
var ErrExpired = errors.New("like batch past its deadline")

// errReply is a script reply of the wrong shape: the script ran, but its results are unknown.
var errReply = errors.New("like script: malformed reply")

// clockSkew is how far the writer's clock may run ahead of Redis'. The script refuses a batch
// once Redis' clock passes its deadline less clockSkew, so that even with clocks that far apart
// it never applies a batch after the writer, on its own clock, has answered its callers 503.
// NTP keeps hosts of one site within a few milliseconds of each other.
const clockSkew = 25 * time.Millisecond

// undatedTimeout bounds a batch whose context has no deadline (tests, tools): the script needs a
// deadline to refuse late runs, and such a caller waits for the answer whatever it is.
const undatedTimeout = 10 * time.Second

// Store keeps likes in Redis.
type Store struct {
	rdb     redis.UniversalClient
	keys    rediskeys.Scheme
	publish string
	acks    int
}

// StoreOptions tune a Store.
type StoreOptions struct {
	// Cluster sends changes out with SPUBLISH, because a classic PUBLISH is copied to every node
	// of a cluster.
	Cluster bool
	// AckReplicas is how many replicas must confirm a batch (WAIT) before its changes are
	// answered; 0 answers once the primary has them. See ack.go.
	AckReplicas int
}

// NewStore returns a Store.
func NewStore(rdb redis.UniversalClient, keys rediskeys.Scheme, o StoreOptions) *Store {
	publish := "PUBLISH"
	if o.Cluster {
		publish = "SPUBLISH"
	}
	return &Store{rdb: rdb, keys: keys, publish: publish, acks: o.AckReplicas}
}

// Load puts the script in Redis' script cache, so requests run it with EVALSHA. After a Redis
// restart empties the cache, go-redis falls back to EVAL once, which reloads it.
func (s *Store) Load(ctx context.Context) error {
	if err := changeScript.Load(ctx, s.rdb).Err(); err != nil {
		return fmt.Errorf("load like script: %w", err)
	}
	return nil
}

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

func (s *Store) one(ctx context.Context, post string, c Change) (Result, error) {
	res, err := s.Apply(ctx, post, []Change{c})
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// Apply stores changes of post in one atomic script call, in their order, and returns each
// one's result: the same results as applying them one by one, with one version bump and one
// publish of the final count for the whole batch (none if nothing changed). A user repeated in
// changes is counted once. On error none of the results is known: the batch either was stored
// whole or not at all.
//
// ctx's deadline bounds the batch in Redis too: the script refuses to run once Redis' clock has
// passed it (less clockSkew), so a caller that gives up at that deadline knows the batch can
// never land afterwards (ErrExpired when Redis saw it too late). A ctx without a deadline gets
// undatedTimeout. Each call carries a fresh batch id, so a copy of it that Redis runs again (a
// retry after a lost reply) returns the first run's results (see changeScript).
func (s *Store) Apply(ctx context.Context, post string, changes []Change) ([]Result, error) {
	n := len(changes)
	if n == 0 || n > MaxBatch {
		return nil, fmt.Errorf("like script: %d changes; want 1 to %d", n, MaxBatch)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, undatedTimeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	}
	keys := make([]string, 4, 4+n)
	keys[0], keys[1], keys[2] = s.keys.Count(post), s.keys.Version(post), s.keys.Channel(post)
	keys[3] = s.keys.Batch(post, strconv.FormatUint(rand.Uint64(), 36))
	ops := make([]byte, n)
	for i, c := range changes {
		keys = append(keys, s.keys.User(post, c.User))
		ops[i] = 'L'
		if c.Unlike {
			ops[i] = 'U'
		}
	}
	cutoff := deadline.Add(-clockSkew)
	args := []any{post, s.publish, ops, cutoff.UnixMilli()}
	reply, err := s.run(ctx, keys, args, cutoff) // again while the post's slot moves: moving.go
	if err != nil {
		return nil, scriptError(err)
	}
	return results(reply, changes)
}

// scriptError names a failed script call, as ErrExpired when the script refused the batch.
func scriptError(err error) error {
	if redis.HasErrorPrefix(err, "DEADLINE") {
		return fmt.Errorf("like script: %w (%w)", ErrExpired, err)
	}
	if errors.Is(err, ErrNotReplicated) {
		return err
	}
	return fmt.Errorf("like script: %w", err)
}

// settled reports whether a batch that failed with err can no longer take effect: Redis ran it
// (its reply came back, or WAIT followed it) or refused it for its deadline. Any other failure,
// such as a lost connection or a timeout, may leave the call on the wire or in Redis' input
// buffer, to run later, until its deadline passes.
func settled(err error) bool {
	return errors.Is(err, ErrExpired) || errors.Is(err, ErrNotReplicated) || errors.Is(err, errReply)
}

// results turns the script's reply, {count before the batch, one byte per change: 1 if it
// changed something}, into each change's result, counting as the script did. A reply of another
// shape is an error, never a panic: the flusher that calls this serves a whole post.
func results(reply []any, changes []Change) ([]Result, error) {
	if len(reply) != 2 {
		return nil, fmt.Errorf("%w: %d values; want a count and flags", errReply, len(reply))
	}
	count, ok := reply[0].(int64)
	if !ok {
		return nil, fmt.Errorf("%w: count %T; want an integer", errReply, reply[0])
	}
	flags, ok := reply[1].(string)
	if !ok || len(flags) != len(changes) {
		return nil, fmt.Errorf("%w: flags %v for %d changes", errReply, reply[1], len(changes))
	}
	res := make([]Result, len(changes))
	for i, c := range changes {
		changed := flags[i] == '1'
		switch {
		case changed && c.Unlike:
			count = max(count-1, 0)
		case changed:
			count++
		}
		res[i] = Result{Count: count, Changed: changed}
	}
	return res, nil
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

package like

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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
	cluster bool // the users' indexes live in other slots: kept from outside the script
	acks    int
	grace   time.Duration
	chunks  chunkCache
}

// StoreOptions tune a Store.
type StoreOptions struct {
	// Cluster sends changes out with SPUBLISH, because a classic PUBLISH is copied to every node
	// of a cluster, and keeps the users' indexes of likes outside the script (userindex.go).
	Cluster bool
	// AckReplicas is how many replicas must confirm a batch (WAIT) before its changes are
	// answered; 0 answers once the primary has them. See ack.go.
	AckReplicas int
	// IndexGrace bounds how long a like may still land after its user's index entry was written
	// (the longest a like request may take, plus margin): on a Cluster an index entry of a post
	// the user does not like is removed only once it is older (userindex.go). 0 means
	// DefaultIndexGrace.
	IndexGrace time.Duration
}

// DefaultIndexGrace is StoreOptions.IndexGrace's default: the writer's default 2 s request
// timeout and a second of margin (the writer passes its own timeout plus that second).
const DefaultIndexGrace = 3 * time.Second

// NewStore returns a Store.
func NewStore(rdb redis.UniversalClient, keys rediskeys.Scheme, o StoreOptions) *Store {
	publish := "PUBLISH"
	if o.Cluster {
		publish = "SPUBLISH"
	}
	if o.IndexGrace <= 0 {
		o.IndexGrace = DefaultIndexGrace
	}
	return &Store{rdb: rdb, keys: keys, publish: publish, cluster: o.Cluster, acks: o.AckReplicas, grace: o.IndexGrace}
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
//
// The script must be told which likers chunks it may touch (see changeScript): the current one,
// which the store remembers per post (chunkCache) and the script corrects, and for unlikes the
// chunks that list the unliking users, read from their dedup keys first. A call the script sends
// back for either changed nothing, and the store calls again, at most maxChunkCalls times. On a
// Cluster the likers' index entries are written before the call and the unlikers' removed after
// it (userindex.go).
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
	cutoff := deadline.Add(-clockSkew)
	if s.cluster {
		if err := s.indexLikes(ctx, post, changes); err != nil {
			return nil, err
		}
	}
	guess := s.chunks.get(post)
	var unliked []int64
	reread := slices.ContainsFunc(changes, func(c Change) bool { return c.Unlike })
	for range maxChunkCalls {
		if reread {
			var err error
			if unliked, err = s.likedChunks(ctx, post, changes); err != nil {
				return nil, err
			}
		}
		keys, args := s.call(post, changes, guess, unliked, cutoff)
		reply, err := s.run(ctx, keys, args, cutoff) // again while the post's slot moves: moving.go
		if err != nil {
			return nil, scriptError(err)
		}
		if code, cur, again := callAgain(reply); again {
			guess = cur
			s.chunks.set(post, cur)
			reread = code == againUnliked
			continue
		}
		res, cur, err := results(reply, changes)
		if err != nil {
			return nil, err
		}
		if cur >= 0 {
			s.chunks.set(post, cur)
		}
		if s.cluster {
			s.unindex(ctx, post, changes, res)
		}
		return res, nil
	}
	return nil, errChunkCalls
}

// maxChunkCalls bounds the calls of one batch that the script sends back (see Apply): each means
// another writer moved the post's chunks on between two calls, which takes 128 likes each time.
const maxChunkCalls = 4

// errChunkCalls is a batch the script sent back maxChunkCalls times: nothing of it was stored.
var errChunkCalls = errors.New("like script: the post's likers chunks moved on at every call")

// The script's codes for a call it sends back (changeScript): the current chunk is not the one
// the call named, or an unliking user's like is in a chunk it did not name.
const (
	againChunk   = -1
	againUnliked = -2
)

// callAgain reports whether reply sends the call back, with the code and the current chunk.
func callAgain(reply []any) (code, cur int64, again bool) {
	if len(reply) != 2 {
		return 0, 0, false
	}
	code, ok := reply[0].(int64)
	if !ok || code >= 0 {
		return 0, 0, false
	}
	cur, _ = reply[1].(int64)
	return code, cur, true
}

// call lays out one script call's KEYS and ARGV as changeScript documents them.
func (s *Store) call(post string, changes []Change, guess int64, unliked []int64, cutoff time.Time) ([]string, []any) {
	n, m := len(changes), len(unliked)
	keys := make([]string, 7, 7+n+m+n)
	keys[0], keys[1], keys[2] = s.keys.Count(post), s.keys.Version(post), s.keys.Channel(post)
	keys[3] = s.keys.Batch(post, strconv.FormatUint(rand.Uint64(), 36))
	keys[4], keys[5], keys[6] = s.keys.LikersChunk(post), s.keys.Likers(post, guess), s.keys.Likers(post, guess+1)
	ops := make([]byte, n)
	for i, c := range changes {
		keys = append(keys, s.keys.User(post, c.User))
		ops[i] = 'L'
		if c.Unlike {
			ops[i] = 'U'
		}
	}
	args := make([]any, 0, 7+m+n)
	args = append(args, post, s.publish, ops, cutoff.UnixMilli(), guess, m)
	for _, c := range unliked {
		keys = append(keys, s.keys.Likers(post, c))
		args = append(args, c)
	}
	for _, c := range changes {
		args = append(args, c.User)
	}
	if s.cluster {
		return keys, append(args, "0")
	}
	for _, c := range changes {
		keys = append(keys, s.keys.UserLikes(c.User))
	}
	return keys, append(args, "1")
}

// likedChunks reads the dedup keys of the batch's unliking users: the chunks that list them.
func (s *Store) likedChunks(ctx context.Context, post string, changes []Change) ([]int64, error) {
	var cmds []*redis.StringCmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range changes {
			if c.Unlike {
				cmds = append(cmds, p.Get(ctx, s.keys.User(post, c.User)))
			}
		}
		return nil
	})
	var out []int64
	for _, cmd := range cmds {
		n, err := cmd.Int64()
		switch {
		case errors.Is(err, redis.Nil):
			continue // not liked
		case err != nil && cmd.Err() == nil:
			continue // not a chunk number (a like stored before chunks): the script skips it too
		case err != nil:
			return nil, fmt.Errorf("read unliking users' likes: %w", err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
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
	return errors.Is(err, ErrExpired) || errors.Is(err, ErrNotReplicated) || errors.Is(err, errReply) ||
		errors.Is(err, errChunkCalls) || errors.Is(err, errIndex)
}

// results turns the script's reply, {count before the batch, one byte per change: 1 if it
// changed something, current likers chunk}, into each change's result, counting as the script
// did, and returns the chunk too (-1 when the reply is a re-run's, which has none). A reply of
// another shape is an error, never a panic: the flusher that calls this serves a whole post.
func results(reply []any, changes []Change) ([]Result, int64, error) {
	if len(reply) != 2 && len(reply) != 3 {
		return nil, 0, fmt.Errorf("%w: %d values; want a count, flags and a chunk", errReply, len(reply))
	}
	count, ok := reply[0].(int64)
	if !ok {
		return nil, 0, fmt.Errorf("%w: count %T; want an integer", errReply, reply[0])
	}
	flags, ok := reply[1].(string)
	if !ok || len(flags) != len(changes) {
		return nil, 0, fmt.Errorf("%w: flags %v for %d changes", errReply, reply[1], len(changes))
	}
	cur := int64(-1)
	if len(reply) == 3 {
		if cur, ok = reply[2].(int64); !ok {
			return nil, 0, fmt.Errorf("%w: chunk %T; want an integer", errReply, reply[2])
		}
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
	return res, cur, nil
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

package like

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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
	every   time.Duration // a user's reactions to one post: at most one per every
	chunks  chunkCache
	offset  func() time.Duration // Redis' clock less this writer's (StoreOptions.ClockOffset)
	skew    time.Duration        // tests only: how far this writer's clock runs ahead of the true time
	keep    int64                // seconds a post's timeline is kept past its minute; 0: no timeline
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
	// ReactionInterval is how often a user may react to one post (any kind); 0 means
	// DefaultReactionInterval.
	ReactionInterval time.Duration
	// ClockOffset, when set, tells how far Redis' clock is ahead of this writer's (negative when
	// behind), as measured: a batch's deadline is sent in Redis' clock, so that a batch answered 503
	// on this writer's clock can never run later on Redis' whatever the skew. nil: the clocks are
	// taken to agree within clockSkew.
	ClockOffset func() time.Duration
	// TimelineRetention is how long each minute of a post's timeline (its likes and reactions per
	// second, rediskeys.Timeline) is kept after the minute ends; 0 keeps none.
	TimelineRetention time.Duration
}

// DefaultReactionInterval is StoreOptions.ReactionInterval's default: one reaction per person
// every 3 s, as Speechwave's live audiences (issue 19).
const DefaultReactionInterval = 3 * time.Second

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
	if o.ReactionInterval <= 0 {
		o.ReactionInterval = DefaultReactionInterval
	}
	return &Store{rdb: rdb, keys: keys, publish: publish, cluster: o.Cluster, acks: o.AckReplicas, grace: o.IndexGrace,
		every: o.ReactionInterval, offset: o.ClockOffset, keep: int64(o.TimelineRetention / time.Second)}
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

// Apply stores changes of post in one atomic script call, in their order, and returns each
// one's result: the same results as applying them one by one, with one version bump and one
// publish of the final state for the whole batch (none if nothing changed). Reactions and likes
// touch different keys, so their relative order does not matter: the script takes the likes in
// their order and the reactions in theirs. A user repeated in
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
	likes, reactions := split(changes)
	deadline, ok := ctx.Deadline()
	if !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, undatedTimeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	}
	cutoff := deadline.Add(-clockSkew) // when this writer stops waiting (timers run on true time)
	redisCutoff := cutoff.Add(s.skew)  // the same instant as this writer's clock names it
	if s.offset != nil {
		redisCutoff = redisCutoff.Add(s.offset()) // and as Redis' clock, which the script reads, does
	}
	if s.cluster {
		if err := s.indexLikes(ctx, post, likes); err != nil {
			return nil, err
		}
	}
	buckets, gates := limits(likes)
	guess := s.chunks.get(post)
	var unliked []int64
	reread := slices.ContainsFunc(likes, func(c Change) bool { return c.Unlike })
	for range maxChunkCalls {
		if reread {
			var err error
			if unliked, err = s.likedChunks(ctx, post, likes); err != nil {
				return nil, err
			}
		}
		keys, args := s.call(post, likes, reactions, guess, unliked, redisCutoff, buckets, gates)
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
		likeRes, reactRes, cur, err := results(reply, likes, len(reactions), gates)
		if err != nil {
			return nil, err
		}
		if cur >= 0 {
			s.chunks.set(post, cur)
		}
		if s.cluster {
			s.unindex(ctx, post, likes, likeRes)
		}
		return merge(changes, likeRes, reactRes), nil
	}
	return nil, errChunkCalls
}

// split separates a batch's likes and unlikes from its reactions, each in their order. Most
// batches have no reactions: they come back as they are.
func split(changes []Change) (likes, reactions []Change) {
	i := slices.IndexFunc(changes, func(c Change) bool { return c.Kind != "" })
	if i < 0 {
		return changes, nil
	}
	likes = slices.Clip(changes[:i]) // an append copies: changes stays as it is
	for _, c := range changes[i:] {
		if c.Kind == "" {
			likes = append(likes, c)
		} else {
			reactions = append(reactions, c)
		}
	}
	return likes, reactions
}

// merge puts the results of a batch's likes and reactions back in the batch's order.
func merge(changes []Change, likes, reactions []Result) []Result {
	if len(reactions) == 0 {
		return likes
	}
	if len(likes) == 0 {
		return reactions
	}
	out := make([]Result, 0, len(changes))
	for _, c := range changes {
		if c.Kind != "" {
			out, reactions = append(out, reactions[0]), reactions[1:]
		} else {
			out, likes = append(out, likes[0]), likes[1:]
		}
	}
	return out
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
func (s *Store) call(post string, changes, reactions []Change, guess int64, unliked []int64, cutoff time.Time,
	buckets []ratelimit.Bucket, gates []int) ([]string, []any) {
	n, m, r, q := len(changes), len(unliked), len(reactions), len(buckets)
	keys := make([]string, 7, 7+n+m+n+1+r+q)
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
	args := make([]any, 0, 11+m+n+r+2*q)
	args = append(args, post, s.publish, ops, cutoff.UnixMilli(), guess, m)
	for _, c := range unliked {
		keys = append(keys, s.keys.Likers(post, c))
		args = append(args, c)
	}
	for _, c := range changes {
		args = append(args, c.User)
	}
	if s.cluster {
		args = append(args, "0")
	} else {
		for _, c := range changes {
			keys = append(keys, s.keys.UserLikes(c.User))
		}
		args = append(args, "1")
	}
	keys = append(keys, s.keys.Reactions(post))
	args = append(args, r, s.every.Milliseconds())
	for _, c := range reactions {
		keys = append(keys, s.keys.ReactionGate(post, c.User))
		args = append(args, c.Kind)
	}
	args = append(args, q)
	for _, b := range buckets {
		keys = append(keys, b.Key)
		args = append(args, b.Interval, b.Burst)
	}
	args = append(args, appendGates(make([]byte, 0, 4*len(gates)), gates))
	if s.keep > 0 {
		keys, args = s.timeline(post, reactions, keys, args)
	}
	return keys, args
}

// timeline appends the current minute's timeline keys and arguments (changeScript): the series of
// likes and unlikes, and one per kind among reactions. The minute is Redis', as this writer's
// clock and the measured offset tell it.
func (s *Store) timeline(post string, reactions []Change, keys []string, args []any) ([]string, []any) {
	now := time.Now()
	if s.offset != nil {
		now = now.Add(s.offset())
	}
	minute := now.Unix() / 60
	keys = append(keys, s.keys.Timeline(post, rediskeys.TimelineLikes, minute), s.keys.Timeline(post, rediskeys.TimelineUnlikes, minute))
	args = append(args, minute*60, (minute+1)*60+s.keep)
	at := len(args)
	args = append(args, 0)
	var kinds []string
	for _, c := range reactions {
		if !slices.Contains(kinds, c.Kind) {
			kinds = append(kinds, c.Kind)
			keys = append(keys, s.keys.Timeline(post, c.Kind, minute))
			args = append(args, c.Kind)
		}
	}
	args[at] = len(kinds)
	return keys, args
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
// (its reply came back, or WAIT followed it), refused it for its deadline, or refused it for
// memory (OOM: a data node at its maxmemory refuses a script before it runs any of it). Any other
// failure, such as a lost connection or a timeout, may leave the call on the wire or in Redis'
// input buffer, to run later, until its deadline passes.
func settled(err error) bool {
	return errors.Is(err, ErrExpired) || errors.Is(err, ErrNotReplicated) || errors.Is(err, errReply) ||
		errors.Is(err, errChunkCalls) || errors.Is(err, errIndex) || redis.HasErrorPrefix(err, "OOM")
}

// results turns the script's reply, {count before the batch, one byte per change: 1 if it
// changed something, current likers chunk, reactions, version, buckets}, into each change's and
// each reaction's result, counting as the script did, and returns the chunk too (-1 when the reply
// is a re-run's, which has none). gates are the changes' bucket numbers as sent (limits). A reply
// of another shape is an error, never a panic: the flusher that calls this serves a whole post.
func results(reply []any, changes []Change, reactions int, gates []int) (likes, reacts []Result, chunk int64, err error) {
	if len(reply) != 6 {
		return nil, nil, 0, fmt.Errorf("%w: %d values; want a count, flags, a chunk, reactions, a version and buckets", errReply, len(reply))
	}
	count, ok := reply[0].(int64)
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: count %T; want an integer", errReply, reply[0])
	}
	flags, ok := reply[1].(string)
	if !ok || len(flags) != len(changes) {
		return nil, nil, 0, fmt.Errorf("%w: flags %v for %d changes", errReply, reply[1], len(changes))
	}
	cur, ok := reply[2].(int64)
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: chunk %T; want an integer", errReply, reply[2])
	}
	ver, ok := reply[4].(int64)
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: version %T; want an integer", errReply, reply[4])
	}
	if reacts, err = reactionResults(reply[3], reactions, ver); err != nil {
		return nil, nil, 0, err
	}
	waits, err := bucketWaits(reply[5], gates)
	if err != nil {
		return nil, nil, 0, err
	}
	likes = make([]Result, len(changes))
	for i, c := range changes {
		res := Result{}
		switch flags[i] {
		case '1':
			res.Changed = true
			if c.Unlike {
				count = max(count-1, 0)
			} else {
				count++
			}
		case 'a':
			res.Limited = 1
		case 'u':
			res.Limited = 2
		}
		res.Count = count
		if waits != nil {
			res.Waits = waits.of(gates, i)
			if res.Limited > 0 {
				res.RetryAfter = max(res.Waits[res.Limited-1], time.Microsecond)
			}
		}
		likes[i] = res
	}
	return likes, reacts, cur, nil
}

// reactionResults reads the script's reactions, one number per reaction: the kind's count after
// it, or -1 - the milliseconds its user must still wait.
func reactionResults(v any, n int, ver int64) ([]Result, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%w: reactions %T; want a string", errReply, v)
	}
	if n == 0 {
		if s != "" {
			return nil, fmt.Errorf("%w: reactions %q for none", errReply, s)
		}
		return nil, nil
	}
	out := make([]Result, 0, n)
	for f := range strings.SplitSeq(s, ",") {
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: reactions %q", errReply, s)
		}
		if x >= 0 {
			out = append(out, Result{Count: x, Changed: true, Version: ver})
		} else {
			out = append(out, Result{RetryAfter: time.Duration(-1-x) * time.Millisecond, Version: ver})
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: reactions %q for %d", errReply, s, n)
	}
	return out, nil
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

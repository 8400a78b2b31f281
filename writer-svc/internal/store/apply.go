package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/writer-svc/internal/ratelimit"
)

// Apply stores changes of post in one atomic script call, in their order, and returns each
// one's result: the same results as applying them one by one, with one version bump and one
// publish of the final state for the whole batch (none if nothing changed). Reactions and likes
// touch different keys, so their relative order does not matter: the script takes the likes in
// their order and the reactions in theirs. A user repeated in
// changes is counted once. On error none of the results is known: the batch either was stored
// whole or not at all.
//
// ctx's deadline bounds the batch in Redis too: the script refuses to run once Redis' clock has
// passed it (less ClockSkew), so a caller that gives up at that deadline knows the batch can
// never land afterwards (ErrExpired when Redis saw it too late). A ctx without a deadline gets
// undatedTimeout. Each call carries a fresh batch id, so a copy of it that Redis runs again (a
// retry after a lost reply) returns the first run's results (see changeScript).
//
// The script must be told which likers chunks it may touch (see changeScript): the current one,
// which the store remembers per post (chunkCache) and the script corrects, and for unlikes the
// chunks that list the unliking users, read from their dedup keys first. A call the script sends
// back for either changed nothing, and the store calls again, at most maxChunkCalls times. On a
// Cluster the likers' index entries are written before the call and the unlikers' removed after
// it (clusterindex.go).
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
	cutoff := deadline.Add(-ClockSkew) // when this writer stops waiting (timers run on true time)
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
	acks := s.replicasToAck() // one answer for the whole batch: its calls and its publish agree
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
		keys, args := s.call(post, likes, reactions, guess, unliked, redisCutoff, buckets, gates, acks > 0)
		reply, err := s.run(ctx, keys, args, cutoff, acks) // again while the post's slot moves: redirect.go
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
	buckets []ratelimit.Bucket, gates []int, deferred bool) ([]string, []any) {
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
	args := make([]any, 0, 12+m+n+r+2*q)
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
	args = append(args, s.emptyTTL, s.mode(deferred))
	if s.keep > 0 {
		keys, args = s.timeline(post, reactions, keys, args)
	}
	if !s.cluster {
		keys = append(keys, s.keys.Epoch()) // last: the script finds it at KEYS[#KEYS]
	}
	return keys, args
}

// mode is the script's mode argument: E when the epoch key is the call's last key (one Redis:
// on a Cluster no script could reach it with the post's keys), D when the batch's replicas must
// confirm it before its state is published (the store publishes it after WAIT: ack.go).
func (s *Store) mode(deferred bool) string {
	m := ""
	if !s.cluster {
		m = "E"
	}
	if deferred {
		m += "D"
	}
	return m
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

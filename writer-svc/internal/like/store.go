package like

import (
	"context"
	"errors"
	"fmt"

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

// Store keeps likes in Redis.
type Store struct {
	rdb     redis.UniversalClient
	keys    rediskeys.Scheme
	publish string
}

// NewStore returns a Store. In cluster mode changes go out with SPUBLISH, because a classic
// PUBLISH is copied to every node of a cluster.
func NewStore(rdb redis.UniversalClient, keys rediskeys.Scheme, cluster bool) *Store {
	publish := "PUBLISH"
	if cluster {
		publish = "SPUBLISH"
	}
	return &Store{rdb: rdb, keys: keys, publish: publish}
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
func (s *Store) Apply(ctx context.Context, post string, changes []Change) ([]Result, error) {
	n := len(changes)
	if n == 0 || n > MaxBatch {
		return nil, fmt.Errorf("like script: %d changes; want 1 to %d", n, MaxBatch)
	}
	keys := make([]string, 3, 3+n)
	keys[0], keys[1], keys[2] = s.keys.Count(post), s.keys.Version(post), s.keys.Channel(post)
	ops := make([]byte, n)
	for i, c := range changes {
		keys = append(keys, s.keys.User(post, c.User))
		ops[i] = 'L'
		if c.Unlike {
			ops[i] = 'U'
		}
	}
	reply, err := changeScript.Run(ctx, s.rdb, keys, post, s.publish, ops).Slice()
	if err != nil {
		return nil, fmt.Errorf("like script: %w", err)
	}
	return results(reply, changes)
}

// results turns the script's reply, {count before the batch, one byte per change: 1 if it
// changed something}, into each change's result, counting as the script did.
func results(reply []any, changes []Change) ([]Result, error) {
	count, ok := reply[0].(int64)
	if len(reply) != 2 || !ok {
		return nil, fmt.Errorf("like script: reply %v; want a count and flags", reply)
	}
	flags, ok := reply[1].(string)
	if !ok || len(flags) != len(changes) {
		return nil, fmt.Errorf("like script: %d flags for %d changes", len(flags), len(changes))
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

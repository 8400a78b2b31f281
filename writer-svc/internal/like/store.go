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

// Load puts the scripts in Redis' script cache, so requests run them with EVALSHA. After a Redis
// restart empties the cache, go-redis falls back to EVAL once per script, which reloads it.
func (s *Store) Load(ctx context.Context) error {
	for _, sc := range []*redis.Script{likeScript, unlikeScript} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load like script: %w", err)
		}
	}
	return nil
}

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return redisconn.Ping(ctx, s.rdb)
}

// Like records that user likes post, once.
func (s *Store) Like(ctx context.Context, post, user string) (Result, error) {
	return s.run(ctx, likeScript, post, user)
}

// Unlike removes user's like of post, if any.
func (s *Store) Unlike(ctx context.Context, post, user string) (Result, error) {
	return s.run(ctx, unlikeScript, post, user)
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

func (s *Store) run(ctx context.Context, sc *redis.Script, post, user string) (Result, error) {
	keys := []string{s.keys.User(post, user), s.keys.Count(post), s.keys.Version(post), s.keys.Channel(post)}
	vals, err := sc.Run(ctx, s.rdb, keys, post, s.publish).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("like script: %w", err)
	}
	if len(vals) != 2 {
		return Result{}, fmt.Errorf("like script: got %d values; want 2", len(vals))
	}
	return Result{Count: vals[0], Changed: vals[1] == 1}, nil
}

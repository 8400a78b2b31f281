package userlikes

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/writer-svc/internal/store"
)

// LikedPost is one entry of a user's likes: the post and when the user liked it.
type LikedPost struct {
	PostID  string
	LikedAt time.Time
}

// Index serves a user's likes, newest first, and removes them all (what a site owes its users
// and privacy law: an export and an erasure). It reads the user's index of likes
// (rediskeys.UserLikes) and checks every entry against the post's dedup key, so that a stale
// entry of a Cluster's index (the store's clusterindex.go) is never shown; a deletion unlikes
// each post through an Unliker, so counts are corrected and each changed post is published like
// any unlike.
type Index struct {
	rdb     redis.UniversalClient
	keys    rediskeys.Scheme
	cluster bool
	grace   time.Duration
	unlike  Unliker
}

// Unliker removes a user's like of a post, correcting its count and publishing it (the batch
// package's Coalescer).
type Unliker interface {
	Unlike(ctx context.Context, post, user string) (store.Result, error)
}

// IndexOptions are what an Index needs besides its Redis and key scheme.
type IndexOptions struct {
	// Cluster and Grace are the store's (store.Options): on a Cluster the index is kept outside
	// the like script, and an entry younger than Grace may belong to a like still on its way.
	// Grace 0 means store.DefaultIndexGrace.
	Cluster bool
	Grace   time.Duration
	// Unlike unlikes each post of an erased user.
	Unlike Unliker
}

// NewIndex returns the Index of the likes kept in rdb.
func NewIndex(rdb redis.UniversalClient, keys rediskeys.Scheme, o IndexOptions) *Index {
	if o.Grace <= 0 {
		o.Grace = store.DefaultIndexGrace
	}
	return &Index{rdb: rdb, keys: keys, cluster: o.Cluster, grace: o.Grace, unlike: o.Unlike}
}

// List returns up to limit of user's likes, newest first, from cursor ("" for the newest), and
// the cursor of the next page ("" after the last). A cursor is the rank, from the oldest, of the
// entry below the page: likes added meanwhile go above it and do not shift the next page, and an
// unlike meanwhile shifts it by one. A page may hold fewer than limit entries, or none, when stale
// ones were dropped or likes below the cursor were removed; only an empty next cursor ends the
// listing.
func (x *Index) List(ctx context.Context, user, cursor string, limit int) ([]LikedPost, string, error) {
	if limit < 1 || limit > MaxPage {
		return nil, "", ErrLimit
	}
	key := x.keys.UserLikes(user)
	rdb := x.rdb
	var lo int64
	var zs []redis.Z
	if cursor == "" {
		var card *redis.IntCmd
		var page *redis.ZSliceCmd
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			card = p.ZCard(ctx, key)
			page = p.ZRangeWithScores(ctx, key, -int64(limit), -1)
			return nil
		})
		if err != nil {
			return nil, "", fmt.Errorf("list likes: %w", err)
		}
		lo, zs = max(card.Val()-int64(limit), 0), page.Val()
	} else {
		hi, err := parseCursorNumber(cursor, 1)
		if err != nil {
			return nil, "", err
		}
		lo = max(hi-int64(limit), 0)
		var card *redis.IntCmd
		var page *redis.ZSliceCmd
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			card = p.ZCard(ctx, key)
			page = p.ZRangeWithScores(ctx, key, lo, hi-1)
			return nil
		}); err != nil {
			return nil, "", fmt.Errorf("list likes: %w", err)
		}
		// A cursor past the index's end (unlikes since, or forged) goes on from the end: the
		// next page is the top one, rather than a walk down through ranks that hold nothing.
		lo, zs = min(lo, card.Val()), page.Val()
	}
	liked, _, err := x.check(ctx, user, zs, time.Now().Add(-x.grace).UnixMicro())
	if err != nil {
		return nil, "", err
	}
	out := make([]LikedPost, 0, len(zs))
	for i := len(zs) - 1; i >= 0; i-- {
		if liked[i] {
			post, _ := zs[i].Member.(string)
			out = append(out, LikedPost{PostID: post, LikedAt: time.UnixMicro(int64(zs[i].Score)).UTC()})
		}
	}
	next := ""
	if lo > 0 { // even after an empty page: unlikes below the cursor shift what is left down past it
		next = strconv.FormatInt(lo, 10)
	}
	return out, next, nil
}

// check reports which entries of user's index name posts the user likes (their dedup key
// exists), in one pipeline, and removes those that do not and were written at or before before
// (unix microseconds; the store's clusterindex.go tells why a younger one may not be stale). It
// returns how many it removed.
func (x *Index) check(ctx context.Context, user string, zs []redis.Z, before int64) ([]bool, int, error) {
	if len(zs) == 0 {
		return nil, 0, nil
	}
	cmds := make([]*redis.IntCmd, len(zs))
	_, _ = x.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, z := range zs {
			post, _ := z.Member.(string)
			cmds[i] = p.Exists(ctx, x.keys.User(post, user))
		}
		return nil
	})
	liked := make([]bool, len(zs))
	var stale []string
	for i, cmd := range cmds {
		n, err := cmd.Result()
		if err != nil {
			return nil, 0, fmt.Errorf("check likes: %w", err)
		}
		liked[i] = n == 1
		if !liked[i] && int64(zs[i].Score) <= before {
			post, _ := zs[i].Member.(string)
			stale = append(stale, post)
		}
	}
	if len(stale) == 0 {
		return liked, 0, nil
	}
	key := x.keys.UserLikes(user)
	removes := make([]*redis.Cmd, len(stale))
	_, _ = x.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, post := range stale {
			removes[i] = store.RemoveStale(ctx, p, key, post, before)
		}
		return nil
	})
	removed := 0
	for _, cmd := range removes {
		n, err := cmd.Int()
		if err != nil {
			return nil, removed, fmt.Errorf("remove stale likes: %w", err)
		}
		removed += n
	}
	return liked, removed, nil
}

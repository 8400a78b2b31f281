package like

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrCursor is a paging cursor that no listing of ours returned; ErrLimit a page size out of
// bounds. Both are 400s.
var (
	ErrCursor = errors.New("bad cursor: pass back the next_cursor of the previous page")
	ErrLimit  = fmt.Errorf("bad limit: want 1 to %d", MaxPage)
)

// MaxPage is the most entries one page of a listing holds; DefaultPage is a page's size when the
// request names none.
const (
	MaxPage     = 100
	DefaultPage = 20
)

// LikedPost is one entry of a user's likes: the post and when the user liked it.
type LikedPost struct {
	PostID  string
	LikedAt time.Time
}

// Index serves a user's likes, newest first, and removes them all (what a site owes its users
// and privacy law: an export and an erasure). It reads the user's index of likes
// (rediskeys.UserLikes) and checks every entry against the post's dedup key, so that a stale
// entry of a Cluster's index (userindex.go) is never shown; a deletion unlikes each post through
// the Coalescer, so counts are corrected and each changed post is published like any unlike.
type Index struct {
	store   *Store
	changes *Coalescer
}

// NewIndex returns the Index of store's likes; deletions go through changes.
func NewIndex(store *Store, changes *Coalescer) *Index {
	return &Index{store: store, changes: changes}
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
	key := x.store.keys.UserLikes(user)
	rdb := x.store.rdb
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
		hi, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || hi <= 0 {
			return nil, "", ErrCursor
		}
		lo = max(hi-int64(limit), 0)
		if zs, err = rdb.ZRangeWithScores(ctx, key, lo, hi-1).Result(); err != nil {
			return nil, "", fmt.Errorf("list likes: %w", err)
		}
	}
	liked, _, err := x.check(ctx, user, zs, time.Now().Add(-x.store.grace).UnixMicro())
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
// (unix microseconds; see userindex.go for why a younger one may not be stale). It returns how
// many it removed.
func (x *Index) check(ctx context.Context, user string, zs []redis.Z, before int64) ([]bool, int, error) {
	if len(zs) == 0 {
		return nil, 0, nil
	}
	s := x.store
	cmds := make([]*redis.IntCmd, len(zs))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, z := range zs {
			post, _ := z.Member.(string)
			cmds[i] = p.Exists(ctx, s.keys.User(post, user))
		}
		return nil
	})
	liked := make([]bool, len(zs))
	var stale []any
	for i, cmd := range cmds {
		n, err := cmd.Result()
		if err != nil {
			return nil, 0, fmt.Errorf("check likes: %w", err)
		}
		liked[i] = n == 1
		if !liked[i] && int64(zs[i].Score) <= before {
			stale = append(stale, zs[i].Member)
		}
	}
	if len(stale) == 0 {
		return liked, 0, nil
	}
	key := s.keys.UserLikes(user)
	removes := make([]*redis.Cmd, len(stale))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, post := range stale {
			removes[i] = unindexScript.Eval(ctx, p, []string{key}, post, before)
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

// deleteParallel is how many unlikes a deletion has in flight at once: enough to hide the round
// trips, few enough to leave every post's queue room for its other users.
const deleteParallel = 16

// deletePage is how many index entries a deletion reads at a time.
const deletePage = 1000

// Delete removes every like of user: each post the index names is unliked through the Coalescer
// (its count corrected and published, as for any unlike), and then the index entries left are
// removed. It returns how many likes it removed. It is idempotent: a second call finds nothing
// and returns 0, and a call that failed midway (a 503) is completed by the next. Likes the user
// makes while it runs may survive it. On a Cluster it waits out the store's grace before it
// removes entries, so that it never drops the entry of a like still on its way (userindex.go).
func (x *Index) Delete(ctx context.Context, user string) (int, error) {
	s := x.store
	key := s.keys.UserLikes(user)
	start := time.Now()
	// On a Cluster an entry's score is its writer's clock, and the entries of likes made after
	// start are left (check could not remove them: they may belong to a like on its way). On one
	// Redis the script keeps the index exact, scored by each like's version, which may run ahead
	// of this writer's clock (Redis' clock ahead of it, or versions kept ahead of a clock that
	// stepped back: changeScript): bounded by start, such likes would survive, reported erased.
	upTo := "(" + strconv.FormatInt(start.UnixMicro(), 10)
	if !s.cluster {
		upTo = "+inf"
	}
	var removed atomic.Int64
	var last []redis.Z // the page of the pass before
	for {
		// Oldest first, in pages: each pass removes its page's entries (the script does as it
		// unlikes, check does on a Cluster or for an entry whose like is gone), so the next pass
		// reads the next page. What is left is the entries of likes made again meanwhile.
		zs, err := s.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
			Min: "-inf", Max: upTo, Count: deletePage,
		}).Result()
		if err != nil {
			return int(removed.Load()), fmt.Errorf("delete likes: %w", err)
		}
		if len(zs) == 0 {
			return int(removed.Load()), nil
		}
		if slices.Equal(zs, last) {
			// The pass before left this page as it was: entries no check may remove (on one
			// Redis, only entries written by hand, which are no likes). Reading it again would
			// loop until ctx ends.
			return int(removed.Load()), nil
		}
		last = zs
		if err := x.unlikeAll(ctx, user, zs, &removed); err != nil {
			return int(removed.Load()), err
		}
		if s.cluster {
			if err := waitUntilCtx(ctx, start.Add(s.grace)); err != nil {
				return int(removed.Load()), fmt.Errorf("delete likes: %w", err)
			}
		}
		liked, dropped, err := x.check(ctx, user, zs, start.UnixMicro())
		if err != nil {
			return int(removed.Load()), err
		}
		if dropped == 0 && !slices.Contains(liked, false) {
			return int(removed.Load()), nil // every entry left is a like made again meanwhile
		}
	}
}

// unlikeAll unlikes the posts of zs for user, deleteParallel at a time, adding to removed each
// one that was liked.
func (x *Index) unlikeAll(ctx context.Context, user string, zs []redis.Z, removed *atomic.Int64) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, deleteParallel)
	var wg sync.WaitGroup
	for _, z := range zs {
		post, _ := z.Member.(string)
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := x.changes.Unlike(ctx, post, user)
			if err != nil {
				cancel(err)
				return
			}
			if res.Changed {
				removed.Add(1)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("delete likes: %w", err)
	}
	return nil
}

// waitUntilCtx returns at t, or with ctx's error if ctx ends first.
func waitUntilCtx(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

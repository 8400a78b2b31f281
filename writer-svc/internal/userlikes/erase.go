package userlikes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

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
// removes entries, so that it never drops the entry of a like still on its way (the store's
// clusterindex.go).
func (x *Index) Delete(ctx context.Context, user string) (int, error) {
	key := x.keys.UserLikes(user)
	start := time.Now()
	// On a Cluster an entry's score is its writer's clock, and the entries of likes made after
	// start are left (check could not remove them: they may belong to a like on its way). On one
	// Redis the script keeps the index exact, scored by each like's version, which may run ahead
	// of this writer's clock (Redis' clock ahead of it, or versions kept ahead of a clock that
	// stepped back: changeScript): bounded by start, such likes would survive, reported erased.
	upTo := "(" + strconv.FormatInt(start.UnixMicro(), 10)
	if !x.cluster {
		upTo = "+inf"
	}
	var removed atomic.Int64
	var last []redis.Z // the page of the pass before
	for {
		// Oldest first, in pages: each pass removes its page's entries (the script does as it
		// unlikes, check does on a Cluster or for an entry whose like is gone), so the next pass
		// reads the next page. What is left is the entries of likes made again meanwhile.
		zs, err := x.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
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
		if x.cluster {
			if err := waitUntilCtx(ctx, start.Add(x.grace)); err != nil {
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
			res, err := x.unlike.Unlike(ctx, post, user)
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

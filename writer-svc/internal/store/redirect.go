package store

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// While a Redis Cluster slot moves (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE),
// the script cannot run anywhere: it always names keys that do not exist (the batch key, the
// channel, a new liker's dedup key) beside keys that do (the count), and a migrating or importing
// node answers TRYAGAIN to such a call until the slot has a single owner again. go-redis retries
// TRYAGAIN only three times, within tens of milliseconds, so without more every like of a post
// whose slot is moving would be answered 503 for the whole move.
//
// Instead a batch is retried with a short, bounded backoff while Redis says its slot is moving,
// up to the batch's cutoff (its earliest request's deadline, less ClockSkew) and no further: a
// like waits as long as its post's keys take to move, plus at most one backoff step, and never
// past its request's deadline. A retry is safe because these replies mean that the script did
// not run, and even if an earlier copy did run (a reply lost on the way) the batch key makes the
// re-run return that copy's results.
const (
	minMoveBackoff = 2 * time.Millisecond
	maxMoveBackoff = 20 * time.Millisecond
)

// redirect is where the next attempt of a batch goes on the acknowledged path (see runAcked),
// which talks to one node client and so must follow redirections itself. The zero value is the
// master that the cluster client's slot map names for the post.
type redirect struct {
	addr   string // a MOVED or ASK target
	asking bool   // ASK: send ASKING first, so the importing node serves the call
}

// slotMoving reports whether err is a Redis reply saying the call did not run because its slot is
// moving or lives elsewhere (TRYAGAIN, ASK, MOVED), and where to send it next.
func slotMoving(err error) (redirect, bool) {
	if addr, ok := redis.IsMovedError(err); ok {
		return redirect{addr: addr}, true
	}
	if addr, ok := redis.IsAskError(err); ok {
		return redirect{addr: addr, asking: true}, true
	}
	return redirect{}, redis.IsTryAgainError(err)
}

// moveBackoff is the pause before retry attempt+1: doubling from minMoveBackoff up to
// maxMoveBackoff, with jitter so that the flushers of many posts do not retry in step.
func moveBackoff(attempt int) time.Duration {
	d := maxMoveBackoff
	if attempt < 4 {
		d = min(minMoveBackoff<<attempt, maxMoveBackoff)
	}
	return d/2 + rand.N(d/2+1)
}

// pause waits d, and reports false instead when waiting d would pass cutoff or ctx ends first:
// the script would refuse the batch for its deadline by then anyway.
func pause(ctx context.Context, d time.Duration, cutoff time.Time) bool {
	if time.Until(cutoff) <= d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

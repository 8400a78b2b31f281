package ratelimit

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/likes/likes/writer-svc/internal/bounded"
)

// Local is a token bucket per id kept in this process only, for a limit whose check must cost
// Redis nothing: the reads of counts, which never write to Redis on demand (issue 49), while the
// shared Limiter SETs a bucket on every event it allows. Each replica counts on its own, so the
// bound on one id is the Rate times the replicas it is balanced onto.
//
// It holds at most maxLocal ids (bounded.Map): a full stripe first drops the full buckets, which
// are the same as none, then arbitrary ones. A flood of distinct ids (an attacker rotating
// addresses) costs memory up to the bound and no more; dropping a bucket that was not full only
// gives that one id a fresh burst, which any id never seen before has anyway.
type Local struct {
	rate    Rate
	limit   rate.Limit
	burst   int
	buckets *bounded.Map[*rate.Limiter]
	now     func() time.Time
}

// maxLocal bounds the ids a Local remembers: a bucket, its key and the map's share take about
// 200 bytes, so about 13 MiB at most.
const maxLocal = 65536

// NewLocal returns a Local that allows each id r; with an Off rate it allows all.
func NewLocal(r Rate) *Local {
	return newLocal(r, maxLocal, time.Now)
}

func newLocal(r Rate, capacity int, now func() time.Time) *Local {
	l := &Local{rate: r, buckets: bounded.New[*rate.Limiter](capacity), now: now}
	if !r.Off() {
		l.limit, l.burst = rate.Every(r.Interval()), r.BurstSize()
	}
	return l
}

// Allow counts one event for id and returns 0 when it is allowed, or how long until id's bucket
// has a token again (its Retry-After). It never fails: the error is there to satisfy the
// interface the handlers share with Limiter. The decision and the wait are taken under the id's
// lock, so concurrent events of one id spend its tokens exactly once.
func (l *Local) Allow(_ context.Context, id string) (time.Duration, error) {
	if l.rate.Off() {
		return 0, nil
	}
	now := l.now()
	var wait time.Duration
	l.buckets.Update(id, func(b *rate.Limiter, ok bool) (*rate.Limiter, bool) {
		if !ok {
			b = rate.NewLimiter(l.limit, l.burst)
		}
		if !b.AllowN(now, 1) {
			missing := 1 - b.TokensAt(now)
			wait = max(time.Duration(missing/float64(l.limit)*float64(time.Second)), time.Microsecond)
		}
		return b, true
	}, func(b *rate.Limiter) bool { return b.TokensAt(now) >= float64(l.burst) })
	return wait, nil
}

// Len is how many ids the Local remembers.
func (l *Local) Len() int { return l.buckets.Len() }

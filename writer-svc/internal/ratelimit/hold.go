package ratelimit

import "time"

// A key that Redis refused, or whose last token a call spent, is refused here a little past the
// moment its bucket has room again: until it has gathered heldTokens tokens (or its burst, if
// smaller), for at most maxHoldPast more. A flooding key's accepted events then reach Redis a few to a call instead of
// one call per token: a flood past "6000/1m" frees a token every 10 ms, and each token asked for
// alone cost Redis a whole script call. The rate allowed over time stays the bucket's: the tokens
// the hold gathers are spent by the requests that come once it ends. A client told Retry-After
// (whole seconds, at least one) never meets the extra; one that retries sooner waits up to
// maxHoldPast longer than the bucket alone would make it.
const (
	heldTokens  = 8
	maxHoldPast = 100 * time.Millisecond
)

// hold returns how long the Limiter refuses a key itself after a call found its bucket empty
// for wait (0: it has room, and the key is not held).
func (l *Limiter) hold(wait time.Duration) time.Duration {
	if wait <= 0 {
		return 0
	}
	tokens := min(heldTokens, l.bucket.Burst) // a bucket holds no more than its burst
	return wait + min(time.Duration(tokens-1)*time.Duration(l.bucket.Interval)*time.Microsecond, maxHoldPast)
}

package ratelimit

import "time"

// Bucket is one id's token bucket, for a check that rides in another script's call instead of a
// call of its own (Take): the like script spends each change's tokens in the change's own batch
// call on one Redis, which keeps the limits' cost out of the like path (one more call per like
// would halve a writer's likes). The script applies LuaGCRA to it, as allowScript does.
type Bucket struct {
	Key      string
	Interval int64 // µs per token
	Burst    int
	l        *Limiter // settled with the call's answer
}

// Zero reports a bucket that is none: no limit, or a key refused here without Redis.
func (b Bucket) Zero() bool { return b.l == nil }

// Take returns id's bucket for another script's call, or how long id is still refused here
// without asking Redis (wait > 0, and a zero Bucket), exactly as Allow decides that. A Limiter
// with an Off rate returns a zero Bucket and 0. Unless the bucket is zero, the caller must Settle
// it once, with the call's answer or 0 when there was none.
func (l *Limiter) Take(id string) (b Bucket, wait time.Duration) {
	if l.rate.Off() {
		return Bucket{}, 0
	}
	key := l.key(id)
	if wait := l.refused.begin(key); wait > 0 {
		return Bucket{}, wait
	}
	b = l.bucket
	b.Key = key
	return b, 0
}

// Settle records what the call found: the bucket stays empty for wait (it refused, or it gave its
// last token), 0 when it has room or the call did not answer. The Limiter then refuses the key
// itself until then and a little longer (hold), as after Allow.
func (b Bucket) Settle(wait time.Duration) {
	if b.l != nil {
		b.l.refused.end(b.Key, wait, b.l.hold(wait))
	}
}

package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
)

// allowScript is a token bucket kept as one number, the generic cell rate algorithm (LuaGCRA):
// the key holds the theoretical arrival time (TAT, in microseconds of Redis's clock) of the next
// event were the bucket never to fill; the key expires when the bucket would be full again, so an
// idle user costs no memory. Redis's clock (TIME) is the one clock every replica shares; the
// script runs as its effects (Redis 7's default), so replicas get the SET, not TIME.
//
// KEYS[1] = bucket key; ARGV[1] = interval (Window/N) in µs; ARGV[2] = burst.
// Returns the microseconds until the event would be allowed when it is refused (> 0); when it is
// allowed, 0 if the bucket has room for another event now, else minus the whole microseconds
// until it has (the writer then refuses the key itself until then: refusals).
var allowScript = redis.NewScript(LuaGCRA + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat, wait = gcra(tonumber(redis.call('GET', KEYS[1])), now, tonumber(ARGV[1]), tonumber(ARGV[2]))
if not tat then
  return math.ceil(wait)
end
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000))
if wait >= 1 then
  return -math.floor(wait)
end
return 0
`)

// LuaGCRA defines the Lua function gcra(tat, now, interval, burst), the one copy of the token
// bucket's rule, for allowScript and for the scripts that spend buckets in their own call (Take).
// A bucket's state is its TAT (nil: full); an event at now (µs) is allowed when TAT - now leaves
// room for it within the burst, and moves TAT one interval on. gcra returns the new TAT, or nil
// when the event is refused, and the µs until the bucket has room for an event again (0: now).
const LuaGCRA = `
local function gcra(tat, now, interval, burst)
  if not tat or tat < now then tat = now end
  local tolerance = interval * (burst - 1)
  local wait = tat - tolerance - now
  if wait > 0 then return nil, wait end
  tat = tat + interval
  return tat, math.max(tat - tolerance - now, 0)
end
`

// Limiter enforces one Rate per user across all replicas that share the Redis.
type Limiter struct {
	rdb      redis.UniversalClient
	key      func(user string) string
	rate     Rate
	interval string // µs
	burst    string
	bucket   Bucket    // the same numbers, for Take
	refused  *refusals // keys Redis refused, answered here until their Retry-After
}

// New returns a Limiter that counts a user's events under keys.RateLimit(user). A Limiter with
// an Off rate allows all.
func New(rdb redis.UniversalClient, keys rediskeys.Scheme, rate Rate) *Limiter {
	l := &Limiter{rdb: rdb, key: keys.RateLimit, rate: rate, refused: newRefusals()}
	if !rate.Off() {
		l.bucket = Bucket{Interval: max(rate.Interval().Microseconds(), 1), Burst: rate.BurstSize(), l: l}
		l.interval = strconv.FormatInt(l.bucket.Interval, 10)
		l.burst = strconv.Itoa(l.bucket.Burst)
	}
	return l
}

// NewNamed returns a Limiter that counts each id's events under name(id), for a limit on
// something other than a user (rediskeys.SessionRate limits new sessions per client address).
func NewNamed(rdb redis.UniversalClient, name func(id string) string, rate Rate) *Limiter {
	l := New(rdb, rediskeys.Scheme{}, rate)
	l.key = name
	return l
}

// Load puts the script in the Redis script cache, so the first request needs no EVAL fallback.
func (l *Limiter) Load(ctx context.Context) error {
	if l.rate.Off() {
		return nil
	}
	if err := allowScript.Load(ctx, l.rdb).Err(); err != nil {
		return fmt.Errorf("load rate limit script: %w", err)
	}
	return nil
}

// Allow counts one event for user and returns 0 when it is allowed, or how long until the user may
// try again. An error means Redis could not be asked; the caller must not treat it as allowed.
// Once Redis has refused user, this Limiter refuses it without Redis until the wait it was given
// has passed (refusals).
func (l *Limiter) Allow(ctx context.Context, user string) (retryAfter time.Duration, err error) {
	if l.rate.Off() {
		return 0, nil
	}
	key := l.key(user)
	if wait := l.refused.begin(key); wait > 0 {
		return wait, nil // refused by Redis lately: no need to ask it again yet
	}
	us, err := allowScript.Run(ctx, l.rdb, []string{key}, l.interval, l.burst).Int64()
	if err != nil {
		l.refused.end(key, 0)
		return 0, fmt.Errorf("rate limit: %w", err)
	}
	wait := time.Duration(us) * time.Microsecond
	if wait < 0 { // allowed, and the bucket is empty for -wait: refuse the key here until then
		l.refused.end(key, -wait)
		return 0, nil
	}
	l.refused.end(key, wait)
	return wait, nil
}

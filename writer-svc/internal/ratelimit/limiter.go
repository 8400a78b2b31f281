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
// It counts n events of one key at once, in order, as n calls would (the requests of a hot key
// share a call: flights): KEYS[1] = bucket key; ARGV[1] = interval (Window/N) in µs; ARGV[2] =
// burst; ARGV[3] = n. It returns {allowed, wait}: the first allowed of the n events are allowed;
// wait is the microseconds until the bucket has room for another event (0: now), which for the
// refused ones is their Retry-After, and for which the writer refuses the key itself (refusals).
var allowScript = redis.NewScript(LuaGCRA + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
local allowed, wait = 0, 0
for _ = 1, tonumber(ARGV[3]) do
  local nt, w = gcra(tat, now, interval, burst)
  wait = w
  if not nt then break end
  tat = nt
  allowed = allowed + 1
end
if allowed > 0 then
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000))
end
return {allowed, math.ceil(wait)}
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
	flights  flights   // the keys asked about now, and the requests waiting behind each
}

// New returns a Limiter that counts a user's events under keys.RateLimit(user). A Limiter with
// an Off rate allows all.
func New(rdb redis.UniversalClient, keys rediskeys.Scheme, rate Rate) *Limiter {
	l := &Limiter{rdb: rdb, key: keys.RateLimit, rate: rate, refused: newRefusals(), flights: flights{keys: map[string]*flight{}}}
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
// has passed, and a little longer (refusals, hold). Requests for a key that is being asked about wait for that call and then
// share the next one (flights).
func (l *Limiter) Allow(ctx context.Context, user string) (retryAfter time.Duration, err error) {
	if l.rate.Off() {
		return 0, nil
	}
	key := l.key(user)
	if wait := l.refused.begin(key); wait > 0 {
		return wait, nil // refused by Redis lately: no need to ask it again yet
	}
	g, i := l.flights.join(key)
	if i == 0 {
		<-g.lead // the call before this group's returns within its deadline
		l.ask(ctx, key, g)
	} else {
		select {
		case <-g.done:
		case <-ctx.Done():
			return 0, fmt.Errorf("rate limit: %w", ctx.Err())
		}
	}
	switch {
	case g.err != nil:
		return 0, fmt.Errorf("rate limit: %w", g.err)
	case i < g.allowed:
		return 0, nil
	default:
		return max(g.wait, time.Microsecond), nil
	}
}

// ask sends group g's call for key, records the answer in g and in the refusals, and hands the
// key to the group behind it. The call belongs to every request of the group, so it runs on a
// context of its own: the leading request's deadline bounds it, its client leaving does not.
func (l *Limiter) ask(ctx context.Context, key string, g *group) {
	if wait := l.refused.refusedFor(key); wait > 0 { // the call before refused the key: no call
		g.wait = wait
		close(g.done)
		l.flights.handOff(key)
		return
	}
	callCtx := context.WithoutCancel(ctx)
	var cancel context.CancelFunc
	if d, ok := ctx.Deadline(); ok {
		callCtx, cancel = context.WithDeadline(callCtx, d)
	} else {
		callCtx, cancel = context.WithTimeout(callCtx, undatedAsk)
	}
	defer cancel()
	r, err := allowScript.Run(callCtx, l.rdb, []string{key}, l.interval, l.burst, g.n).Int64Slice()
	switch {
	case err != nil:
		g.err = err
	case len(r) != 2 || r[0] < 0 || r[1] < 0:
		g.err = fmt.Errorf("rate limit script: reply %v; want {allowed, wait}", r)
	default:
		g.allowed, g.wait = int(r[0]), time.Duration(r[1])*time.Microsecond
	}
	l.refused.end(key, g.wait, l.hold(g.wait)) // 0 after an error: the next request asks Redis
	close(g.done)
	l.flights.handOff(key)
}

// undatedAsk bounds a call led by a request without a deadline (tests, tools).
const undatedAsk = 10 * time.Second

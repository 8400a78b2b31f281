package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
)

// allowScript counts one event in a fixed window and answers how long the caller must wait (in
// milliseconds, 0 = allowed). INCR and PEXPIRE run in one script so a crash between them can never
// leave a counter without expiry, which would lock the user out for good. With N = 1 this is
// exactly SET key 1 PX window NX.
//
// KEYS[1] = counter key; ARGV[1] = window in ms; ARGV[2] = N.
var allowScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if n <= tonumber(ARGV[2]) then
  return 0
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return ttl
`)

// Limiter enforces one Rate per user across all replicas that share the Redis.
type Limiter struct {
	rdb    redis.UniversalClient
	key    func(user string) string
	rate   Rate
	window string
	limit  string
}

// New returns a Limiter that counts a user's events under keys.RateLimit(user). A Limiter with
// an Off rate allows all.
func New(rdb redis.UniversalClient, keys rediskeys.Scheme, rate Rate) *Limiter {
	return &Limiter{
		rdb:    rdb,
		key:    keys.RateLimit,
		rate:   rate,
		window: strconv.FormatInt(rate.Window.Milliseconds(), 10),
		limit:  strconv.Itoa(rate.N),
	}
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
func (l *Limiter) Allow(ctx context.Context, user string) (retryAfter time.Duration, err error) {
	if l.rate.Off() {
		return 0, nil
	}
	ms, err := allowScript.Run(ctx, l.rdb, []string{l.key(user)}, l.window, l.limit).Int64()
	if err != nil {
		return 0, fmt.Errorf("rate limit: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Package sessiontokentest helps the tests of session token signers: a clock they set, and the
// keys a keyring keeps in Redis.
package sessiontokentest

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
)

// Clock is a settable clock, shared by the signers of a test as the clocks of machines that agree.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts one second after a boundary of the key rotation period rotate (a whole number of
// seconds), so that a test knows which key is current and how long until the next.
func NewClock(rotate time.Duration) *Clock {
	now := time.Now().Unix()
	return &Clock{t: time.Unix(now-now%int64(rotate/time.Second)+1, 0)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Secret reads the signing key kid from Redis.
func Secret(t testing.TB, rdb redis.UniversalClient, keys rediskeys.Scheme, kid string) []byte {
	t.Helper()
	v, err := rdb.Get(context.Background(), keys.SessionKey(kid)).Result()
	if err != nil {
		t.Fatal(err)
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Keys lists the names of the signing keys in Redis.
func Keys(t testing.TB, rdb redis.UniversalClient, keys rediskeys.Scheme) []string {
	t.Helper()
	got, err := rdb.Keys(context.Background(), keys.SessionKey("*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

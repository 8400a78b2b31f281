package session

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/rediskeys"
)

var testKeys = rediskeys.New("likes:")

// clock is a settable clock shared by the issuers of a test, standing for writers whose clocks
// agree.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock starts at a fixed second just after a period boundary of rotate, so tests know which
// key is current.
func newClock(rotate time.Duration) *clock {
	start := time.Now().Truncate(time.Second)
	period := int64(rotate / time.Second)
	return &clock{t: time.Unix(start.Unix()-mod(start.Unix(), period)+1, 0)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testOptions are short, valid settings on clk.
func testOptions(clk *clock) Options {
	return Options{TTL: 10 * time.Minute, RefreshGrace: 20 * time.Minute, MaxAge: time.Hour, KeyRotate: time.Hour,
		KeyRefresh: time.Hour, UnknownKIDEvery: time.Nanosecond, Now: clk.Now}
}

// newIssuer returns an Issuer on rdb, closed when the test ends.
func newIssuer(t *testing.T, rdb redis.UniversalClient, o Options) *Issuer {
	t.Helper()
	s, err := New(rdb, testKeys, o, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// parsed reads a token's kid and claims without verifying it.
func parsed(t *testing.T, raw string) (string, claims) {
	t.Helper()
	var c claims
	tok, _, err := jwt.NewParser().ParseUnverified(raw, &c)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	return kid, c
}

// forge signs c under kid with secret, as someone holding (or guessing) a key would.
func forge(t *testing.T, c claims, kid string, secret []byte) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// secretOf reads key kid from Redis.
func secretOf(t *testing.T, rdb redis.UniversalClient, kid string) []byte {
	t.Helper()
	v, err := rdb.Get(context.Background(), testKeys.SessionKey(kid)).Result()
	if err != nil {
		t.Fatal(err)
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sessionKeys lists the session keys in Redis.
func sessionKeys(t *testing.T, rdb redis.UniversalClient) []string {
	t.Helper()
	got, err := rdb.Keys(context.Background(), testKeys.SessionKey("*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

package session

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/sessiontokentest"
)

var testKeys = rediskeys.New("likes:")

// testOptions are short, valid settings on clk.
func testOptions(clk *sessiontokentest.Clock) Options {
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
func parsed(t *testing.T, raw string) (string, sessiontoken.Claims) {
	t.Helper()
	var c sessiontoken.Claims
	tok, _, err := jwt.NewParser().ParseUnverified(raw, &c)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	return kid, c
}

// forge signs c under kid with secret, as someone holding (or guessing) a key would.
func forge(t *testing.T, c sessiontoken.Claims, kid string, secret []byte) string {
	t.Helper()
	s, err := sessiontoken.Sign(c, kid, secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

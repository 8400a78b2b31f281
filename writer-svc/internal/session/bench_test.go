package session

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/sessiontokentest"
)

// commandCounter is a go-redis hook that counts the commands a client sends.
type commandCounter struct{ n atomic.Int64 }

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

var testBenchSecret = []byte("0123456789abcdef0123456789abcdef-bench")

// benchToken signs a token for user under the benchmark kid with secret, as loadgen does.
func benchToken(t *testing.T, clk *sessiontokentest.Clock, user string, secret []byte) string {
	t.Helper()
	now := clk.Now().Unix()
	return forge(t, sessiontoken.NewClaims(user, now, now, now+600), sessiontoken.BenchKeyID, secret)
}

// TestBenchTokens: with a benchmark secret, a benchmark token verifies for a benchmark user and
// for nobody else, is never refreshed, and a token of the deployment's own key never names a
// benchmark user; without one, a benchmark token is a token of an unknown key. In neither case
// does a benchmark token cause a Redis command, while an unknown kid that could be a key does.
func TestBenchTokens(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	var sent commandCounter
	rdb.AddHook(&sent)
	clk := sessiontokentest.NewClock(time.Hour)
	o := testOptions(clk)
	o.BenchSecret = testBenchSecret
	on := newIssuer(t, rdb, o)
	off := newIssuer(t, rdb, testOptions(clk))
	visitor := mustIssue(t, on) // creates and loads the deployment's key
	if err := off.Load(ctx); err != nil {
		t.Fatal(err)
	}
	kid, claims := parsed(t, visitor.Token)
	claims.Subject = sessiontoken.BenchUserPrefix + "lg1-u1"
	realKeyForBenchUser := forge(t, claims, kid, sessiontokentest.Secret(t, srv.Client(t), testKeys, kid))
	before := sent.n.Load()

	wantUser(t, on, benchToken(t, clk, "bench-lg1-u1", testBenchSecret), "bench-lg1-u1")
	for name, raw := range map[string]string{
		"a benchmark token for a session's user":  benchToken(t, clk, visitor.UserID, testBenchSecret),
		"a benchmark token for a site's user":     benchToken(t, clk, "alice", testBenchSecret),
		"a benchmark token for benchmark-u1":      benchToken(t, clk, "benchmark-u1", testBenchSecret),
		"a benchmark token with another secret":   benchToken(t, clk, "bench-lg1-u1", []byte("an-attacker-secret-of-32-bytes!!")),
		"the deployment's key for a bench user":   realKeyForBenchUser,
		"the benchmark secret under the real kid": forge(t, claims, kid, testBenchSecret),
	} {
		_, err := on.Verify(ctx, raw)
		wantRefused(t, name, err)
	}
	_, err := off.Verify(ctx, benchToken(t, clk, "bench-lg1-u1", testBenchSecret))
	wantRefused(t, "a benchmark token with benchmark mode off", err)
	clk.Advance(time.Minute)
	_, err = on.Refresh(ctx, benchToken(t, clk, "bench-lg1-u1", testBenchSecret))
	wantRefused(t, "refreshing a benchmark token", err)
	if n := sent.n.Load() - before; n != 0 {
		t.Errorf("benchmark tokens sent %d Redis commands; want none", n)
	}

	// The counter does see a lookup: an unknown kid that could name a key goes to Redis.
	period, err := strconv.ParseInt(kid, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	unknown := strconv.FormatInt(period-1, 10) // a second before the key's period: no key, but could be one
	_, err = off.Verify(ctx, forge(t, claims, unknown, testBenchSecret))
	wantRefused(t, "an unknown kid", err)
	if sent.n.Load() == before {
		t.Error("an unknown plausible kid sent no Redis command: the counter counts nothing")
	}
}

// TestSessionsAreNotBenchUsers: POST /session's ids can never fall in the benchmark namespace,
// whatever their random part.
func TestSessionsAreNotBenchUsers(t *testing.T) {
	if strings.HasPrefix(userIDPrefix, sessiontoken.BenchUserPrefix) || strings.HasPrefix(sessiontoken.BenchUserPrefix, userIDPrefix) {
		t.Fatalf("session ids begin with %q, benchmark users with %q: one is a prefix of the other", userIDPrefix, sessiontoken.BenchUserPrefix)
	}
	for range 100 {
		if id := newUserID(); sessiontoken.IsBenchUser(id) {
			t.Fatalf("session user id %q is a benchmark user", id)
		}
	}
}

// TestBenchSecretValidated: a benchmark secret shorter than an HS256 key is refused.
func TestBenchSecretValidated(t *testing.T) {
	o := DefaultOptions()
	o.BenchSecret = []byte("short")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "benchmark") {
		t.Errorf("a short benchmark secret: %v; want an error naming it", err)
	}
	o.BenchSecret = testBenchSecret
	if err := o.Validate(); err != nil {
		t.Errorf("a benchmark secret of %d bytes: %v", len(testBenchSecret), err)
	}
}

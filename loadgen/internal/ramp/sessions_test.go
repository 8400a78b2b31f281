package ramp

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/redistest"
)

// TestSessionsKeyOnCluster: on a Cluster the ramp signs with the key stored on whichever node
// owns it, though --redis names another: the key a writer then finds there too.
func TestSessionsKeyOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx := context.Background()
	now, period := time.Now().Unix(), int64(sessiontoken.DefaultKeyRotate/time.Second)
	kid := strconv.FormatInt(now-now%period, 10) // the current period's key (a boundary within the test is a week away)
	name := rediskeys.New("likes:").SessionKey(kid)
	redisAddr := c.Addrs()[0]
	if owner := c.NodeFor(name); owner.Addr == redisAddr {
		redisAddr = c.Addrs()[1]
	}
	cfg := Config{Redis: redisAddr, RedisPrefix: "likes:", Identity: IdentitySession, SessionKeyRotate: sessiontoken.DefaultKeyRotate}
	v := newRedisView(ctx, cfg)
	defer v.close()
	s, err := startSessions(ctx, v, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if got := s.follow.Key().ID; got != kid {
		t.Fatalf("signing with key %s; want the current period's, %s", got, kid)
	}
	if stored, err := c.Client(t).Get(ctx, name).Result(); err != nil || stored == "" {
		t.Fatalf("key %s in the Cluster: %q, %v", name, stored, err)
	}
}

// TestSessionsNeedRedis: a ramp whose Redis does not answer fails before its first phase, saying
// what it could not do.
func TestSessionsNeedRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cfg := Config{Redis: freeport.Addr(t), RedisPrefix: "likes:", Identity: IdentitySession, SessionKeyRotate: time.Hour}
	v := newRedisView(ctx, cfg)
	defer v.close()
	if _, err := startSessions(ctx, v, cfg); err == nil || !strings.Contains(err.Error(), "--identity session") {
		t.Fatalf("sessions with Redis down: %v; want an error naming --identity session", err)
	}
}

// TestBenchSessions: --identity bench signs for users in the benchmark namespace with the key file
// alone, no Redis named; a key file that cannot be used fails the ramp before its first phase,
// saying which identity needed it.
func TestBenchSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench-session.key")
	if err := os.WriteFile(path, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Identity: IdentityBench, BenchKeyFile: path, UserPrefix: "lg1-u"}
	opt, users, err := benchSessions(cfg)
	if err != nil || opt == nil || users != sessiontoken.BenchUserPrefix+"lg1-u" {
		t.Fatalf("benchSessions: %v, users %q; want an identity for users %slg1-u", err, users, sessiontoken.BenchUserPrefix)
	}
	cfg.BenchKeyFile = path + ".missing"
	if _, _, err := benchSessions(cfg); err == nil || !strings.Contains(err.Error(), "--identity bench") {
		t.Errorf("a missing key file: %v; want an error naming --identity bench", err)
	}
}

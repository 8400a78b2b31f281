package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/redistest"
)

var rlKeys = rediskeys.New("rl:")

func TestLimiterSharedAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rate := Rate{N: 2, Window: 400 * time.Millisecond}
	// Two limiters with their own clients stand for two writer replicas.
	a := New(srv.Client(t), rlKeys, rate)
	b := New(srv.Client(t), rlKeys, rate)
	if err := a.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for i, l := range []*Limiter{a, b} {
		if wait, err := l.Allow(ctx, "alice"); err != nil || wait != 0 {
			t.Fatalf("event %d: wait %v, %v; want allowed", i, wait, err)
		}
	}
	wait, err := a.Allow(ctx, "alice")
	if err != nil || wait <= 0 || wait > rate.Window {
		t.Fatalf("third event: wait %v, %v; want 0 < wait <= %v", wait, err, rate.Window)
	}
	if wait, err := b.Allow(ctx, "bob"); err != nil || wait != 0 {
		t.Errorf("another user: wait %v, %v; want allowed", wait, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		wait, err := b.Allow(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice still limited 5s after a 400ms window")
		}
		time.Sleep(wait)
	}
}

// TestLimiterCounterExpires: every counter lives under the user's rediskeys name with an expiry
// (a minute's window, so that a loaded machine cannot let it lapse before the check).
func TestLimiterCounterExpires(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	l := New(srv.Client(t), rlKeys, Rate{N: 1, Window: time.Minute})
	if _, err := l.Allow(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if ttl, err := srv.Client(t).PTTL(ctx, rlKeys.RateLimit("carol")).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("PTTL of %s = %v, %v; want an expiry within the window", rlKeys.RateLimit("carol"), ttl, err)
	}
}

func TestLimiterOffAllowsWithoutRedis(t *testing.T) {
	l := New(nil, rlKeys, Rate{})
	if wait, err := l.Allow(context.Background(), "u"); err != nil || wait != 0 {
		t.Errorf("off limiter: wait %v, %v; want allowed", wait, err)
	}
}

func TestLimiterRedisDownIsAnError(t *testing.T) {
	srv := redistest.Start(t)
	l := New(srv.Client(t), rlKeys, Rate{N: 1, Window: time.Second})
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := l.Allow(ctx, "u"); err == nil {
		t.Error("Allow with Redis down: got nil error; a limiter must not fail open silently")
	}
}

// TestNamedLimiter: a named limiter counts under the names it is given, not the user keys.
func TestNamedLimiter(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	l := NewNamed(srv.Client(t), rlKeys.SessionRate, Rate{N: 1, Window: time.Minute})
	if wait, err := l.Allow(ctx, "192.0.2.1"); err != nil || wait != 0 {
		t.Fatalf("first: wait %v, %v; want allowed", wait, err)
	}
	if wait, err := l.Allow(ctx, "192.0.2.1"); err != nil || wait <= 0 {
		t.Errorf("second: wait %v, %v; want limited", wait, err)
	}
	if n := srv.Client(t).Exists(ctx, rlKeys.SessionRate("192.0.2.1"), rlKeys.RateLimit("192.0.2.1")).Val(); n != 1 {
		t.Errorf("%d of the session and user counters exist; want only the session one", n)
	}
}

// TestLimiterBurst: a bucket of 3 at 30 a minute allows three events at once, then one every
// 2 s: the fourth is told to wait about one interval, not a whole window.
func TestLimiterBurst(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rate := Rate{N: 30, Window: time.Minute, Burst: 3}
	l := New(srv.Client(t), rlKeys, rate)
	for i := range 3 {
		if wait, err := l.Allow(ctx, "dave"); err != nil || wait != 0 {
			t.Fatalf("event %d of the burst: wait %v, %v; want allowed", i+1, wait, err)
		}
	}
	wait, err := l.Allow(ctx, "dave")
	if err != nil || wait <= 0 || wait > rate.Interval() {
		t.Fatalf("event past the burst: wait %v, %v; want 0 < wait <= %v", wait, err, rate.Interval())
	}
	// A refused event spends nothing: asking again at once is refused for no longer.
	again, err := l.Allow(ctx, "dave")
	if err != nil || again <= 0 || again > wait {
		t.Errorf("asked again: wait %v, %v; want 0 < wait <= %v", again, err, wait)
	}
}

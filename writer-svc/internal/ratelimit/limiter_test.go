package ratelimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
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

// TestRefusedKeyCostsRedisNothingUntilItsRetryAfter: once Redis refused a user, the limiter
// answers that user's next requests itself, with the remaining wait, until the Retry-After (and
// the hold past it) has passed; then it asks Redis again and is allowed. Another replica, which
// has not seen the refusal, still asks Redis.
func TestRefusedKeyCostsRedisNothingUntilItsRetryAfter(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rate := Rate{N: 1, Window: 2 * time.Second} // long enough that a loaded machine stays within it
	a, b := New(srv.Client(t), rlKeys, rate), New(srv.Client(t), rlKeys, rate)
	if wait, err := a.Allow(ctx, "flood"); err != nil || wait != 0 {
		t.Fatalf("first: %v, %v", wait, err)
	}
	first, err := a.Allow(ctx, "flood")
	if err != nil || first <= 0 {
		t.Fatalf("second: %v, %v; want refused", first, err)
	}
	calls := srv.ScriptCalls(t)
	for range 1000 {
		wait, err := a.Allow(ctx, "flood")
		if err != nil || wait <= 0 || wait > first {
			t.Fatalf("while refused: %v, %v; want 0 < wait <= %v", wait, err, first)
		}
		if wait < time.Millisecond*5 {
			break // about to expire: what follows may ask Redis
		}
	}
	if got := srv.ScriptCalls(t) - calls; got != 0 {
		t.Errorf("%d script calls while the key was refused; want 0", got)
	}
	if wait, err := b.Allow(ctx, "flood"); err != nil || wait <= 0 {
		t.Errorf("the other replica: %v, %v; want refused by Redis", wait, err)
	}
	if got := srv.ScriptCalls(t) - calls; got != 1 {
		t.Errorf("the other replica made %d script calls; want 1", got)
	}
	poll.Until(t, 5*time.Second, "the refused user to be allowed after its Retry-After", func() bool {
		wait, err := a.Allow(ctx, "flood")
		return err == nil && wait == 0
	})
}

// TestRefusalsAreBounded: a flood of distinct refused keys keeps at most the bound in memory.
func TestRefusalsAreBounded(t *testing.T) {
	r := newRefusals()
	for i := range maxRefusals * 3 {
		r.end("k"+strconv.Itoa(i), time.Minute, time.Minute)
	}
	if n := r.keys.Len(); n > maxRefusals {
		t.Errorf("%d keys remembered; want at most %d", n, maxRefusals)
	}
	r.end("last", time.Minute, time.Minute)
	if r.begin("last") <= 0 {
		t.Error("the newest refusal was not kept")
	}
}

// TestFewAskOnceRefused: once a refused key's hold is over, heldTokens requests ask Redis and the
// others that come meanwhile are refused here, until an answer refuses the key again or the
// key's admissions are over (then it is forgotten); an answer with room does not reopen it to
// all. A key never refused is never held back.
func TestFewAskOnceRefused(t *testing.T) {
	r := newRefusals()
	clock := time.Now()
	r.now = func() time.Time { return clock }
	for range 2 { // two at once: neither is held back
		if r.begin("fresh") != 0 {
			t.Fatal("a key never refused was held back")
		}
	}
	r.end("fresh", 0, 0)
	r.end("flood", 10*time.Millisecond, 10*time.Millisecond)
	if w := r.begin("flood"); w != 10*time.Millisecond {
		t.Fatalf("while refused: %v; want the 10ms left", w)
	}
	clock = clock.Add(10 * time.Millisecond)
	for i := range heldTokens {
		if w := r.begin("flood"); w != 0 {
			t.Fatalf("request %d after the wait: %v; want it to ask Redis", i+1, w)
		}
	}
	if w := r.begin("flood"); w != refusedWhileAsking {
		t.Fatalf("while %d others ask: %v; want %v", heldTokens, w, refusedWhileAsking)
	}
	r.end("flood", 0, 0) // Redis allowed one
	if w := r.begin("flood"); w != refusedWhileAsking {
		t.Fatalf("after one allowed: %v; want still %v until the admissions are over", w, refusedWhileAsking)
	}
	r.end("flood", 5*time.Millisecond, 5*time.Millisecond) // another found the bucket empty
	if w := r.begin("flood"); w != 5*time.Millisecond {
		t.Fatalf("refused again: %v; want the new 5ms", w)
	}
	clock = clock.Add(5*time.Millisecond + admitFor)
	if w := r.begin("flood"); w != 0 {
		t.Fatalf("after the admissions: %v; want to ask", w)
	}
	if n := r.keys.Len(); n != 0 {
		t.Errorf("%d keys remembered once forgotten; want none", n)
	}
}

// TestRequestsOfAKeyShareACall: while a key's call is in flight (held by CLIENT PAUSE), the
// requests for it that come wait behind it and then go together in one call, which counts each of
// them in order: exactly the burst is allowed, the rest refused with the bucket's wait, in two
// script calls for 200 requests.
func TestRequestsOfAKeyShareACall(t *testing.T) {
	srv := redistest.Start(t)
	const burst, requests = 50, 200
	l := NewNamed(srv.Client(t), func(id string) string { return "rl:" + id }, Rate{N: burst, Window: time.Hour, Burst: burst})
	ctx := context.Background()
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	calls := srv.ScriptCalls(t)
	srv.HoldScripts(t)
	type answer struct {
		wait time.Duration
		err  error
	}
	answers := make(chan answer, requests)
	ask := func() {
		wait, err := l.Allow(ctx, "hot")
		answers <- answer{wait, err}
	}
	go ask() // exits when answered: the call the others queue behind
	srv.AwaitHeldScript(t)
	for range requests - 1 {
		go ask() // exits when answered
	}
	poll.Until(t, 10*time.Second, "the requests queued behind the held call", func() bool {
		l.flights.mu.Lock()
		defer l.flights.mu.Unlock()
		fl := l.flights.keys[l.key("hot")]
		return fl != nil && fl.next != nil && fl.next.n == requests-1
	})
	srv.ReleaseScripts(t)
	allowed, refused := 0, 0
	for range requests {
		a := <-answers
		switch {
		case a.err != nil:
			t.Fatalf("Allow: %v", a.err)
		case a.wait == 0:
			allowed++
		case a.wait > 0 && a.wait <= time.Hour/burst:
			refused++
		default:
			t.Errorf("a refusal's wait %v; want within one interval (%v)", a.wait, time.Hour/burst)
		}
	}
	if allowed != burst || refused != requests-burst {
		t.Errorf("%d allowed, %d refused; want %d and %d", allowed, refused, burst, requests-burst)
	}
	if n := srv.ScriptCalls(t) - calls; n != 2 {
		t.Errorf("%d requests of one key cost %d script calls; want 2 (the held one, then the rest together)", requests, n)
	}
	poll.Until(t, 10*time.Second, "the key no longer in flight once its last call answered", func() bool {
		l.flights.mu.Lock()
		defer l.flights.mu.Unlock()
		return len(l.flights.keys) == 0
	})
}

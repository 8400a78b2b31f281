package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// TestHoldGathersAFewTokens: a key refused for wait is held here until its bucket has gathered
// heldTokens tokens, never more than maxHoldPast past the wait, and a key with room is not held.
func TestHoldGathersAFewTokens(t *testing.T) {
	for _, tc := range []struct {
		rate Rate
		want time.Duration // past the wait
	}{
		{Rate{N: 100, Window: time.Second}, 70 * time.Millisecond},           // a token every 10 ms: 7 more
		{Rate{N: 6000, Window: time.Minute}, 70 * time.Millisecond},          // LIKE_ADDR_RATE's default
		{Rate{N: 30, Window: time.Minute, Burst: 10}, maxHoldPast},           // a token every 2 s: capped
		{Rate{N: 100000, Window: time.Second}, 70 * time.Microsecond},        // 10 µs a token
		{Rate{N: 100, Window: time.Second, Burst: 3}, 20 * time.Millisecond}, // no more than the burst
		{Rate{N: 100, Window: time.Second, Burst: 1}, 0},                     // nothing to gather
	} {
		l := New(nil, rlKeys, tc.rate)
		if got := l.hold(5*time.Millisecond) - 5*time.Millisecond; got != tc.want {
			t.Errorf("%v: held %v past the wait; want %v", tc.rate, got, tc.want)
		}
		if got := l.hold(0); got != 0 {
			t.Errorf("%v: a bucket with room held for %v; want 0", tc.rate, got)
		}
	}
}

// TestHeldKeyTellsItsBucketsWait: a held key is refused here until the hold ends, but the wait it
// is told (its Retry-After) is its bucket's: the hold never lengthens a Retry-After.
func TestHeldKeyTellsItsBucketsWait(t *testing.T) {
	r := newRefusals()
	clock := time.Now()
	r.now = func() time.Time { return clock }
	r.end("flood", 10*time.Millisecond, 80*time.Millisecond)
	if w := r.begin("flood"); w != 10*time.Millisecond {
		t.Fatalf("before the bucket has room: %v; want its 10ms", w)
	}
	clock = clock.Add(30 * time.Millisecond)
	if w, f := r.begin("flood"), r.refusedFor("flood"); w != refusedWhileAsking || f != refusedWhileAsking {
		t.Fatalf("held past the room: begin %v, refusedFor %v; want %v", w, f, refusedWhileAsking)
	}
	clock = clock.Add(50 * time.Millisecond)
	if w := r.begin("flood"); w != 0 {
		t.Fatalf("once the hold is over: %v; want to ask Redis", w)
	}
}

// TestFloodedKeyTakesTokensAFewToACall: a key flooded past its rate (a token every 10 ms) gets the
// rate's events over time, but once its burst is spent Redis sees fewer calls than events
// allowed: the hold lets the tokens gather, and the requests that come once it ends spend them a
// few to a call (2.3-4 here). Without the hold each token costs a call of its own (or more).
func TestFloodedKeyTakesTokensAFewToACall(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	l := NewNamed(srv.Client(t), func(id string) string { return "rl:" + id }, Rate{N: 100, Window: time.Second, Burst: 20})
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// round sends 16 requests at once, as a flood's connections do, and counts those allowed.
	round := func() (allowed int) {
		answers := make(chan time.Duration, 16)
		for range 16 {
			go func() { // exits when answered
				wait, err := l.Allow(ctx, "flood")
				if err != nil {
					t.Error(err)
				}
				answers <- wait
			}()
		}
		for range 16 {
			if <-answers == 0 {
				allowed++
			}
		}
		return allowed
	}
	for round() == 16 { // spend the burst
	}
	calls := srv.ScriptCalls(t)
	allowed := 0
	for rounds := 0; allowed < 32; rounds++ {
		if rounds > 1_000_000 {
			t.Fatal("32 events not allowed in a million rounds")
		}
		allowed += round()
	}
	if n := srv.ScriptCalls(t) - calls; 2*allowed < 3*int(n) {
		t.Errorf("%d events allowed in %d script calls; want at least 1.5 a call", allowed, n)
	}
}

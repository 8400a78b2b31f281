package ratelimit

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand, read from any goroutine.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// allow counts one event for id and returns its wait.
func allow(t *testing.T, l *Local, id string) time.Duration {
	t.Helper()
	wait, err := l.Allow(context.Background(), id)
	if err != nil {
		t.Fatalf("Allow(%q): %v; a Local never fails", id, err)
	}
	return wait
}

// TestLocalRefusesPastBurstAndRefills: an id gets its burst at once, then a refusal whose wait is
// exactly the time its next token takes (the Retry-After), and a token back once that has passed;
// another id has its own bucket.
func TestLocalRefusesPastBurstAndRefills(t *testing.T) {
	clock := newFakeClock()
	l := newLocal(Rate{N: 3, Window: time.Hour, Burst: 3}, maxLocal, clock.now)
	for i := range 3 {
		if wait := allow(t, l, "203.0.113.7"); wait != 0 {
			t.Fatalf("event %d within the burst: wait %s; want allowed", i, wait)
		}
	}
	if wait := allow(t, l, "203.0.113.7"); wait < 20*time.Minute-time.Millisecond || wait > 20*time.Minute {
		t.Errorf("event past the burst: wait %s; want 20m (one token of 3/1h)", wait)
	}
	clock.add(5 * time.Minute)
	if wait := allow(t, l, "203.0.113.7"); wait < 15*time.Minute-time.Millisecond || wait > 15*time.Minute {
		t.Errorf("5m later: wait %s; want 15m (a refusal spends nothing)", wait)
	}
	if wait := allow(t, l, "203.0.113.8"); wait != 0 {
		t.Errorf("another id: wait %s; want allowed (its own bucket)", wait)
	}
	clock.add(15 * time.Minute)
	if wait := allow(t, l, "203.0.113.7"); wait != 0 {
		t.Errorf("once the wait has passed: wait %s; want allowed (a token came back)", wait)
	}
	if wait := allow(t, l, "203.0.113.7"); wait == 0 {
		t.Error("the event after the refilled one: allowed; want refused (one token came back, not more)")
	}
}

// TestLocalSpendsEachTokenOnce: concurrent events of one id are allowed exactly its burst.
func TestLocalSpendsEachTokenOnce(t *testing.T) {
	clock := newFakeClock()
	l := newLocal(Rate{N: 50, Window: time.Hour}, maxLocal, clock.now)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if wait, _ := l.Allow(context.Background(), "2001:db8::/64"); wait == 0 {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 50 {
		t.Errorf("200 concurrent events: %d allowed; want the burst, 50", n)
	}
}

// TestLocalStaysBounded: 100,000 distinct ids (an attacker rotating addresses), from several
// goroutines, leave at most maxLocal buckets, and the newest id still has its own.
func TestLocalStaysBounded(t *testing.T) {
	l := newLocal(Rate{N: 1200, Window: time.Minute, Burst: 600}, maxLocal, newFakeClock().now)
	const ids, workers = 100_000, 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < ids; i += workers {
				_, _ = l.Allow(context.Background(), "10."+strconv.Itoa(i>>16)+"."+strconv.Itoa(i>>8&255)+"."+strconv.Itoa(i&255))
			}
		})
	}
	wg.Wait()
	if n := l.Len(); n > maxLocal || n < maxLocal/2 {
		t.Errorf("%d buckets after %d distinct ids; want at most %d (and most of them: it is a cache)", n, ids, maxLocal)
	}
	for range 600 {
		if wait := allow(t, l, "newest"); wait != 0 {
			t.Fatalf("the newest id within its burst: wait %s; want allowed", wait)
		}
	}
	if wait := allow(t, l, "newest"); wait == 0 {
		t.Error("the newest id past its burst: allowed; want refused (its bucket is kept)")
	}
}

// TestLocalOff: an Off rate allows everything and remembers nothing.
func TestLocalOff(t *testing.T) {
	l := NewLocal(Rate{})
	for range 10 {
		if wait := allow(t, l, "a"); wait != 0 {
			t.Fatalf("off: wait %s; want allowed", wait)
		}
	}
	if n := l.Len(); n != 0 {
		t.Errorf("off: %d buckets; want none", n)
	}
}

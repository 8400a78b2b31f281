package watching

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// settle bounds how long a unit test waits for a total; the e2e test asserts the three-interval
// bound on real processes.
const settle = 5 * time.Second

func TestTotalsAcrossNodesAndDeadNodeDisappears(t *testing.T) {
	client := redistest.Start(t).Client(t)
	a := startNode(t, client, Config{}, map[string]int{"p": 100})
	b := startNode(t, client, Config{}, map[string]int{"p": 200})
	c := startNode(t, client, Config{}, map[string]int{"p": 300})
	waitTotal(t, settle, "p", 600, a, b, c)
	wa, _ := a.total("p")
	wc, _ := c.total("p")
	if wa.TS != wc.TS || wa.TS%int64(testInterval/time.Microsecond) != 0 {
		t.Errorf("nodes label 600 with ts %d and %d; want the same interval start", wa.TS, wc.TS)
	}

	b.set("p", 50) // viewers leave node b
	waitTotal(t, settle, "p", 450, a, b, c)
	c.kill() // node c dies: its 300 must disappear
	waitTotal(t, settle, "p", 150, a, b)
}

func TestEachNodeAddsOncePerInterval(t *testing.T) {
	rs := redistest.Start(t)
	client := rs.Client(t)
	// A long interval, so that reading three intervals' keys cannot race their expiry, nor a tick
	// fall out of its interval, on a loaded machine.
	const interval = time.Second
	a := startNode(t, client, Config{Interval: interval}, map[string]int{"p": 7})
	b := startNode(t, client, Config{Interval: interval}, map[string]int{"p": 5})
	poll.Until(t, 30*time.Second, "both nodes to tick at least 4 and 2 times", func() bool {
		return a.counter.Stats().Ticks.Load() >= 4 && b.counter.Stats().Ticks.Load() >= 2
	})
	// No interval ever holds more than 7 + 5 (a node never adds twice), the recent ones hold
	// exactly that (a tick delayed past its interval by a busy machine may leave one short), and
	// every key expires within three intervals.
	ctx := context.Background()
	now := time.Now().UnixNano() / int64(interval)
	exact := 0
	for iv := now - 3; iv < now; iv++ {
		key := keys.Watching("p", iv)
		n, err := client.Get(ctx, key).Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil || n > 12 {
			t.Errorf("%s = %d, %v; want at most 12", key, n, err)
		}
		if n == 12 {
			exact++
		}
		ttl, err := client.PTTL(ctx, key).Result()
		if ttl == -2 { // expired since the GET: it did expire
			continue
		}
		// PTTL counts whole milliseconds: a key with under 1 ms left reads 0. -1 would be a key
		// that never expires.
		if err != nil || ttl < 0 || ttl > 3*interval {
			t.Errorf("%s expires in %v, %v; want within [0, %v]", key, ttl, err, 3*interval)
		}
	}
	if exact == 0 {
		t.Error("no recent interval holds 12; want the sum of both nodes")
	}
}

func TestManyPostsInBatchesOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	client := cl.Client(t)
	// Posts spread over the three masters; batches of 4 so that several round trips run.
	one, two := map[string]int{}, map[string]int{}
	for i := range 20 {
		post := "post-" + strconv.Itoa(i)
		one[post], two[post] = i+1, 10*(i+1)
	}
	two["only-two"] = 3
	a := startNode(t, client, Config{Batch: 4}, one)
	b := startNode(t, client, Config{Batch: 4}, two)
	for i := range 20 {
		waitTotal(t, settle, "post-"+strconv.Itoa(i), int64(11*(i+1)), a, b)
	}
	waitTotal(t, settle, "only-two", 3, b)
	if _, ok := a.total("only-two"); ok {
		t.Error("node a was handed a total of a post it has no viewers of")
	}
}

func TestRedisDownPublishesNothingAndRecovers(t *testing.T) {
	rs := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	a := startNode(t, client, Config{}, map[string]int{"p": 4})
	waitTotal(t, settle, "p", 4, a)

	rs.Kill()
	errs := a.counter.Stats().Errors.Load()
	a.set("p", 9)
	waitTicks(t, a.counter, 3)
	if got := a.counter.Stats().Errors.Load(); got <= errs {
		t.Errorf("errors stayed at %d while Redis was down; want more", got)
	}
	if w, _ := a.total("p"); w.Watching != 4 {
		t.Errorf("total became %d while Redis was down; want the last known 4", w.Watching)
	}
	rs.Restart()
	waitTotal(t, settle, "p", 9, a)
}

func TestUntilNextTick(t *testing.T) {
	c, err := New(Config{Interval: 2 * time.Second}, nil, keys, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 0) // an interval boundary
	tests := []struct {
		name string
		give time.Duration // offset of now into an interval
		want time.Duration
	}{
		{"at the boundary", 0, 500 * time.Millisecond},
		{"just before the tick", 499 * time.Millisecond, time.Millisecond},
		{"at the tick", 500 * time.Millisecond, 2 * time.Second},
		{"after the tick", 600 * time.Millisecond, 1900 * time.Millisecond},
		{"end of interval", 1999 * time.Millisecond, 501 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.untilNextTick(base.Add(tt.give)); got != tt.want {
				t.Errorf("got %v; want %v", got, tt.want)
			}
		})
	}
}

func TestNewRejectsNoInterval(t *testing.T) {
	if _, err := New(Config{}, nil, keys, nil, nil, nil); err == nil {
		t.Error("New with no interval succeeded; want an error")
	}
}

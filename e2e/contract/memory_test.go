package contract

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
)

// The bounds the run must end within, RSS from each process's start (once /healthz answers),
// used_memory from the start of the fuzz (after the fixtures' sessions and likes):
//
//   - rssBound: each service's RSS. The fuzz sends tens of thousands of requests, some of 8 KB
//     and some naming 10,000 posts, and opens and closes streams; what a request allocates is
//     garbage once it is answered, and the Go runtime returns freed memory to the OS over a few
//     minutes, so an RSS some tens of MiB above the start is a heap that grew and has not been
//     scavenged yet. A leak per request (a goroutine, a viewer, a subscription left behind) over
//     thousands of requests passes it. Under the race detector, whose shadow memory is several
//     times the heap, the bound is three times as large.
//   - redisSlack + redisPerWrite per write: Redis's used_memory. The fuzz must not flush and
//     does not need to: the likes, unlikes and reactions it makes legitimately cost memory (a
//     post's count, version and likers, the user's index, the timeline's per-minute counters:
//     1.4 to 1.7 KiB each for a write that brings a new post into existence, the costliest kind,
//     as TestWriteCost measures; redisPerWrite allows twice as much, since Redis's allocator
//     rounds differently from run to run), and the slack covers client buffers, the streams'
//     subscriptions within their 5 s grace and the allocator. A read that leaves state behind,
//     or a write that stores far more than a like's keys, passes it.
//
// hardCap is where the watchdog kills a service mid-run (see watchdog): ten times the largest
// growth a passing run shows (about +50 MiB under the race detector), and reached within about a
// second by a request that makes a process grow without bound.
const (
	rssBound      = 64 << 20
	raceRSSFactor = 3
	redisSlack    = 8 << 20
	redisPerWrite = 4 << 10
	hardCap       = 512 << 20
)

// rssLimit is rssBound, scaled for the race detector's shadow memory when the services run under it.
func rssLimit() int64 {
	if raceEnabled {
		return rssBound * raceRSSFactor
	}
	return rssBound
}

// usedMemory returns Redis's used_memory in bytes.
func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO memory")
}

// checkMemory waits up to a minute for each service's RSS to be within rssLimit of its start and
// for Redis's used_memory to be within redisSlack plus redisPerWrite per write of its start
// (base), and fails the test naming what stayed above.
func checkMemory(t *testing.T, rdb *redis.Client, redisBase int64, writes int, services ...*service) {
	t.Helper()
	redisLimit := int64(redisSlack + redisPerWrite*writes)
	poll.Check(t, time.Minute, func() error {
		for _, s := range services {
			rss, err := s.rss()
			if err != nil {
				return err
			}
			if grown := rss - s.base(); grown > rssLimit() {
				return fmt.Errorf("%s RSS %d MiB, %d MiB above its start; want at most %d MiB above", s.name, rss>>20, grown>>20, rssLimit()>>20)
			}
		}
		used, err := usedMemory(context.Background(), rdb)
		if err != nil {
			return err
		}
		if grown := used - redisBase; grown > redisLimit {
			return fmt.Errorf("redis used_memory %d KiB, %d KiB above its start after %d writes; want at most %d KiB above", used>>10, grown>>10, writes, redisLimit>>10)
		}
		return nil
	})
	for _, s := range services {
		rss, _ := s.rss()
		t.Logf("%s RSS %d MiB at the end, %+d MiB from the start (bound %d MiB)", s.name, rss>>20, (rss-s.base())>>20, rssLimit()>>20)
	}
	used, _ := usedMemory(context.Background(), rdb)
	t.Logf("redis used_memory %+d KiB after %d writes (bound %d KiB)", (used-redisBase)>>10, writes, redisLimit>>10)
}

package store_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// The Redis ceiling of one post: how many likes of one post one Redis core can store, driving the
// script directly. Run it with Redis on a core of its own (docs/BENCHMARKS.md has the commands):
//
//	taskset -c 1 redis-server --port 6400 --save '' --appendonly no &
//	LIKES_BENCH_REDIS=127.0.0.1:6400 taskset -c 0 go test -run '^$' -bench Ceiling ./writer-svc/internal/store/
//
// Each benchmark reports Redis' own CPU (INFO cpu, user + sys, over the run) per like stored, and
// its inverse, likes per Redis CPU-second: the ceiling of one core, whatever the client's speed.
// BenchmarkLikeCeiling uses only Store.Like, so the same file measures earlier versions of the
// store (one script call per like) for comparison.

// benchRedis returns a client of the Redis named by LIKES_BENCH_REDIS (flushed first), or of a
// throwaway redis-server.
func benchRedis(b *testing.B) *redis.Client {
	b.Helper()
	addr := os.Getenv("LIKES_BENCH_REDIS")
	if addr == "" {
		addr = redistest.Start(b).Addr
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	b.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return rdb
}

// redisCPU returns Redis' CPU time so far, in microseconds.
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		name, value, _ := strings.Cut(line, ":")
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			v, _ := strconv.ParseFloat(value, 64)
			total += v * 1e6
		}
	}
	return total
}

// benchStore returns a store on benchRedis with the scripts loaded.
func benchStore(b *testing.B) (*store.Store, *redis.Client) {
	b.Helper()
	rdb := benchRedis(b)
	s := store.New(rdb, storetest.Keys, store.Options{})
	if err := s.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s, rdb
}

// measureLikes runs store from callers goroutines until b.N calls, each storing the likes of
// the fresh users it takes from newUser and returning how many, and reports Redis CPU per like.
// LIKES_BENCH_PAUSE (a duration) makes each caller wait that long after each call, so that Redis
// idles between calls as it does behind a writer whose clients are slower than it: the same
// calls, on a core that sleeps between them.
func measureLikes(b *testing.B, rdb *redis.Client, callers int, store func(newUser func() string) (int, error)) {
	b.Helper()
	var pause time.Duration
	if v := os.Getenv("LIKES_BENCH_PAUSE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("LIKES_BENCH_PAUSE: %v", err)
		}
		pause = d
	}
	var seq, likes atomic.Int64
	newUser := func() string { return "u" + strconv.FormatInt(seq.Add(1), 36) }
	b.SetParallelism(callers)
	before := redisCPU(b, rdb)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n, err := store(newUser)
			if err != nil {
				b.Error(err)
				return
			}
			likes.Add(int64(n))
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	})
	b.StopTimer()
	used := redisCPU(b, rdb) - before
	if likes.Load() == 0 || used <= 0 {
		return
	}
	b.ReportMetric(used/float64(likes.Load()), "redis-µs/like")
	b.ReportMetric(float64(likes.Load())/(used/1e6), "likes/redis-cpu-s")
}

// BenchmarkLikeCeiling stores likes of new users on one post, one script call each, from 64
// concurrent callers (as many as the wrk benchmark's connections).
func BenchmarkLikeCeiling(b *testing.B) {
	s, rdb := benchStore(b)
	ctx := context.Background()
	measureLikes(b, rdb, 64, func(newUser func() string) (int, error) {
		_, err := s.Like(ctx, "hot", newUser())
		return 1, err
	})
}

package like

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkLikerMemory stores b.N likes of one post, each by a new user, in batches of MaxBatch
// through Store.Apply, and reports Redis' used_memory per like (B/like): everything a like keeps
// (the dedup key, the likers chunk entry and the user's index). docs/SCALING.md quotes it at 10M
// likers:
//
//	go test -run '^$' -bench BenchmarkLikerMemory -benchtime 10000000x ./writer-svc/internal/like/
//
// It uses nothing newer than Store.Apply, so the same file measures an older store too.
func BenchmarkLikerMemory(b *testing.B) {
	ctx := context.Background()
	s, rdb := benchStore(b)
	before := usedMemory(ctx, b, rdb)
	b.ResetTimer()
	likeNewUsers(ctx, b, s, "viral", MaxBatch)
	b.StopTimer()
	b.ReportMetric(float64(usedMemory(ctx, b, rdb)-before)/float64(b.N), "B/like")
}

// BenchmarkLikeRedisCPU stores b.N likes of one post in batches of 20 (about what a hot post's
// batches hold in scripts/bench-writer.sh) through Store.Apply and reports the Redis server's CPU
// (INFO cpu, user + sys) per like: the like path's Redis cost without a writer or HTTP around it.
// "new-users" likes come from users who never liked anything, so each creates its user's index
// key (the viral case bench-writer measures); "returning-users" come from users who already like
// one other post, as most of a site's likers do, so each adds an entry to an index that exists.
// It shares the ceiling benchmarks' Redis (benchRedis: LIKES_BENCH_REDIS or a throwaway server)
// and their CPU reading (redisCPU); unlike them it calls from one goroutine, batch after batch.
//
//	go test -run '^$' -bench BenchmarkLikeRedisCPU -benchtime 200000x -count 3 ./writer-svc/internal/like/
func BenchmarkLikeRedisCPU(b *testing.B) {
	for _, returning := range []bool{false, true} {
		name := "new-users"
		if returning {
			name = "returning-users"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s, rdb := benchStore(b)
			if returning {
				likeNewUsers(ctx, b, s, "earlier", 20)
			}
			before := redisCPU(b, rdb)
			b.ResetTimer()
			likeNewUsers(ctx, b, s, "hot", 20)
			b.StopTimer()
			b.ReportMetric((redisCPU(b, rdb)-before)/float64(b.N), "redis-us/like")
		})
	}
}

// likeNewUsers stores b.N likes of post by users user-0 .. user-<b.N-1> in batches of batch
// through Store.Apply, and checks that the post's count is then b.N.
func likeNewUsers(ctx context.Context, b *testing.B, s *Store, post string, batch int) {
	changes := make([]Change, 0, batch)
	for i := 0; i < b.N; i++ {
		changes = append(changes, Change{User: "user-" + strconv.Itoa(i)})
		if len(changes) == batch || i == b.N-1 {
			if _, err := s.Apply(ctx, post, changes); err != nil {
				b.Fatal(err)
			}
			changes = changes[:0]
		}
	}
	if n, err := s.Count(ctx, post); err != nil || n != int64(b.N) {
		b.Fatalf("count of %s %d, %v; want %d", post, n, err, b.N)
	}
}

func usedMemory(ctx context.Context, b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no used_memory in INFO memory")
	return 0
}

package like

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redistest"
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
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	s := NewStore(rdb, keys, StoreOptions{})
	if err := s.Load(ctx); err != nil {
		b.Fatal(err)
	}
	before := usedMemory(ctx, b, rdb)
	b.ResetTimer()
	changes := make([]Change, 0, MaxBatch)
	for i := 0; i < b.N; i++ {
		changes = append(changes, Change{User: "user-" + strconv.Itoa(i)})
		if len(changes) == MaxBatch || i == b.N-1 {
			if _, err := s.Apply(ctx, "viral", changes); err != nil {
				b.Fatal(err)
			}
			changes = changes[:0]
		}
	}
	b.StopTimer()
	if n, err := s.Count(ctx, "viral"); err != nil || n != int64(b.N) {
		b.Fatalf("count %d, %v; want %d", n, err, b.N)
	}
	b.ReportMetric(float64(usedMemory(ctx, b, rdb)-before)/float64(b.N), "B/like")
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

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

// BenchmarkLikeRedisCPU stores b.N likes of one post in batches of 20 (about what a hot post's
// batches hold in scripts/bench-writer.sh) through Store.Apply and reports the Redis server's CPU
// (INFO cpu, user + sys) per like: the like path's Redis cost without a writer or HTTP around it.
// "new-users" likes come from users who never liked anything, so each creates its user's index
// key (the viral case bench-writer measures); "returning-users" come from users who already like
// one other post, as most of a site's likers do, so each adds an entry to an index that exists.
//
//	go test -run '^$' -bench BenchmarkLikeRedisCPU -benchtime 200000x -count 3 ./writer-svc/internal/like/
func BenchmarkLikeRedisCPU(b *testing.B) {
	for _, returning := range []bool{false, true} {
		name := "new-users"
		if returning {
			name = "returning-users"
		}
		b.Run(name, func(b *testing.B) {
			srv := redistest.Start(b)
			rdb := srv.Client(b)
			ctx := context.Background()
			s := NewStore(rdb, keys, StoreOptions{})
			if err := s.Load(ctx); err != nil {
				b.Fatal(err)
			}
			const batch = 20
			likeAll := func(post string) {
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
			}
			if returning {
				likeAll("earlier")
			}
			before := infoNumber(ctx, b, rdb, "cpu", "used_cpu_user") + infoNumber(ctx, b, rdb, "cpu", "used_cpu_sys")
			b.ResetTimer()
			likeAll("hot")
			b.StopTimer()
			after := infoNumber(ctx, b, rdb, "cpu", "used_cpu_user") + infoNumber(ctx, b, rdb, "cpu", "used_cpu_sys")
			if n, err := s.Count(ctx, "hot"); err != nil || n != int64(b.N) {
				b.Fatalf("count %d, %v; want %d", n, err, b.N)
			}
			b.ReportMetric((after-before)*1e6/float64(b.N), "redis-us/like")
		})
	}
}

func usedMemory(ctx context.Context, b *testing.B, rdb *redis.Client) int64 {
	return int64(infoNumber(ctx, b, rdb, "memory", "used_memory"))
}

// infoNumber reads one numeric field of an INFO section (seconds for used_cpu_*, bytes for
// used_memory).
func infoNumber(ctx context.Context, b *testing.B, rdb *redis.Client, section, field string) float64 {
	info, err := rdb.Info(ctx, section).Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in INFO %s", field, section)
	return 0
}

package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkLikerMemory stores b.N likes of one post, each by a new user, in batches of store.MaxBatch
// through Store.Apply, and reports Redis' used_memory per like (B/like): everything a like keeps
// (the dedup key, the likers chunk entry and the user's index). docs/SCALING.md quotes it at 10M
// likers:
//
//	go test -run '^$' -bench BenchmarkLikerMemory -benchtime 10000000x ./writer-svc/internal/store/
//
// It uses nothing newer than Store.Apply, so the same file measures an older store too.
func BenchmarkLikerMemory(b *testing.B) {
	ctx := context.Background()
	s, rdb := benchStore(b)
	before := usedMemory(ctx, b, rdb)
	b.ResetTimer()
	likeNewUsers(ctx, b, s, "viral", store.MaxBatch)
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
//	go test -run '^$' -bench BenchmarkLikeRedisCPU -benchtime 200000x -count 3 ./writer-svc/internal/store/
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
func likeNewUsers(ctx context.Context, b *testing.B, s *store.Store, post string, batch int) {
	changes := make([]store.Change, 0, batch)
	for i := 0; i < b.N; i++ {
		changes = append(changes, store.Change{User: "user-" + strconv.Itoa(i)})
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

// BenchmarkPostMemory brings b.N posts into existence, each with one like by one user, one call
// each, and reports Redis' used_memory per post (B/post): the count, the version, the likers
// chunk number and chunk, the like's dedup key and the user's index entry (one user's index of
// b.N posts), and with a reaction its counts' hash. Batch storetest.Keys, which live a second past their
// call's deadline, and reaction gates, which live the reaction interval, are removed before the
// reading: they are what a call leaves for seconds, not what a post keeps. docs/SCALING.md
// quotes it:
//
//	go test -run '^$' -bench BenchmarkPostMemory -benchtime 100000x ./writer-svc/internal/store/
func BenchmarkPostMemory(b *testing.B) {
	for _, react := range []bool{false, true} {
		name := "a-like"
		if react {
			name = "a-like-and-a-reaction"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s, rdb := benchStore(b)
			before := usedMemory(ctx, b, rdb)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				changes := []store.Change{{User: "one-user"}}
				if react {
					changes = append(changes, store.Change{User: "one-user", Kind: "clap"})
				}
				if _, err := s.Apply(ctx, "post-"+strconv.Itoa(i), changes); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			dropKeys(ctx, b, rdb, storetest.Keys.Batch("*", "*"))
			dropKeys(ctx, b, rdb, storetest.Keys.ReactionGate("*", "*"))
			b.ReportMetric(float64(usedMemory(ctx, b, rdb)-before)/float64(b.N), "B/post")
		})
	}
}

// BenchmarkReactionMemory counts b.N reactions to one post, each by a new user, and reports
// Redis' used_memory per reaction while their gates live (B/reaction: the gate, one key per user
// and post for the reaction interval) and after they expired (the kinds' counts alone: about
// nothing per reaction). docs/SCALING.md quotes it:
//
//	go test -run '^$' -bench BenchmarkReactionMemory -benchtime 100000x ./writer-svc/internal/store/
func BenchmarkReactionMemory(b *testing.B) {
	ctx := context.Background()
	rdb := benchRedis(b)
	const interval = time.Second
	s := store.New(rdb, storetest.Keys, store.Options{ReactionInterval: interval})
	if err := s.Load(ctx); err != nil {
		b.Fatal(err)
	}
	before := usedMemory(ctx, b, rdb)
	b.ResetTimer()
	changes := make([]store.Change, 0, 20)
	for i := 0; i < b.N; i++ {
		changes = append(changes, store.Change{User: "reactor-" + strconv.Itoa(i), Kind: "clap"})
		if len(changes) == cap(changes) || i == b.N-1 {
			if _, err := s.Apply(ctx, "stage", changes); err != nil {
				b.Fatal(err)
			}
			changes = changes[:0]
		}
	}
	b.StopTimer()
	dropKeys(ctx, b, rdb, storetest.Keys.Batch("*", "*"))
	b.ReportMetric(float64(usedMemory(ctx, b, rdb)-before)/float64(b.N), "B/reaction-live")
	// The gates expire after the interval; Redis' active expiry removes them within a few
	// hundred milliseconds of that, which the loop awaits.
	deadline := time.Now().Add(30 * time.Second)
	for rdb.Exists(ctx, storetest.Keys.ReactionGate("stage", "reactor-0")).Val() == 1 || rdb.DBSize(ctx).Val() > 20 {
		if time.Now().After(deadline) {
			b.Fatalf("reaction gates still there 30 s after their %s interval: %d storetest.Keys", interval, rdb.DBSize(ctx).Val())
		}
		time.Sleep(100 * time.Millisecond) // active expiry's own pace; nothing to await but it
	}
	b.ReportMetric(float64(usedMemory(ctx, b, rdb)-before)/float64(b.N), "B/reaction-kept")
}

// dropKeys removes the storetest.Keys matching pattern, such as the batch storetest.Keys the calls left (they expire a
// second past their call's deadline): a memory reading wants what a post keeps.
func dropKeys(ctx context.Context, b *testing.B, rdb *redis.Client, pattern string) {
	b.Helper()
	iter := rdb.Scan(ctx, 0, pattern, 10000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			rdb.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		b.Fatal(err)
	}
	if len(batch) > 0 {
		rdb.Unlink(ctx, batch...)
	}
}

// BenchmarkEmptyPostMemory brings b.N posts into existence with a like and takes them back with an
// unlike, two calls each, and reports Redis' used_memory per post such a pair leaves
// (B/empty-post; batch keys removed, as in BenchmarkPostMemory): the count and the version, for
// ever with EMPTY_POST_TTL 0 (as on 973e844), until the expiry with one ("ttl-24h"), and nothing
// once it passed ("expired", a 1 s expiry the benchmark awaits). docs/RELIABILITY.md quotes it:
//
//	go test -run '^$' -bench BenchmarkEmptyPostMemory -benchtime 100000x ./writer-svc/internal/store/
func BenchmarkEmptyPostMemory(b *testing.B) {
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"ttl-0", 0}, {"ttl-24h", 24 * time.Hour}, {"expired", time.Second}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			rdb := benchRedis(b)
			s := store.New(rdb, storetest.Keys, store.Options{EmptyPostTTL: c.ttl})
			if err := s.Load(ctx); err != nil {
				b.Fatal(err)
			}
			before := usedMemory(ctx, b, rdb)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				post := "post-" + strconv.Itoa(i)
				if _, err := s.Like(ctx, post, "one-user"); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Unlike(ctx, post, "one-user"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			dropKeys(ctx, b, rdb, storetest.Keys.Batch("*", "*"))
			if c.name == "expired" {
				// Redis' active expiry removes expired keys a sample at a time, within a few
				// hundred milliseconds of their expiry.
				poll.Check(b, time.Minute, func() error {
					if n := rdb.DBSize(ctx).Val(); n > 0 {
						return fmt.Errorf("%d keys left after their %s expiry", n, c.ttl)
					}
					return nil
				})
			}
			b.ReportMetric(float64(usedMemory(ctx, b, rdb)-before)/float64(b.N), "B/empty-post")
			b.ReportMetric(float64(rdb.DBSize(ctx).Val())/float64(b.N), "keys/empty-post")
		})
	}
}

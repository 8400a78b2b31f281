package hub

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/update"
)

// BenchmarkWatchingChurn holds N viewers over 10 posts and, per iteration, gives every post a
// new watching number (below 1,000, so each one changes what viewers are shown), as churn does
// every WATCHING_INTERVAL. A changed number costs no write of its own (it waits for a count or
// the heartbeat), so writes/viewer should stay near 0: the figure to quote from a run alone,
// beside cpu-ns/viewer, the loop's cost per viewer per interval. One more viewer, of a post of
// its own, gets a count after each round: its frame tells that the loop has taken the numbers.
func BenchmarkWatchingChurn(b *testing.B) {
	const held = 10
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("viewers=%d", n), func(b *testing.B) {
			h := startHub(b, Config{Loops: 1}, posts.Config{UnsubscribeGrace: time.Hour}, newRecordingSubscriber())
			ids := make([]string, held)
			acquired := make([][]*posts.Post, held)
			for i := range ids {
				ids[i] = "watch-" + strconv.Itoa(i)
				p, err := h.posts.Acquire(b.Context(), []string{ids[i]})
				if err != nil {
					b.Fatal(err)
				}
				acquired[i] = p
			}
			barrier, err := h.posts.Acquire(b.Context(), []string{"barrier"})
			if err != nil {
				b.Fatal(err)
			}
			conns := startSink(b, n+1)
			for i, c := range conns[:n] {
				h.Reserve(0)
				_ = h.Add(Viewer{Conn: c, Posts: acquired[i%held], Snapshot: []update.Update{{PostID: ids[i%held]}}})
			}
			h.Reserve(0)
			_ = h.Add(Viewer{Conn: conns[n], Posts: barrier, Snapshot: []update.Update{{PostID: "barrier"}}})
			stats := h.Stats()
			for stats.FramesSent.Load() < int64(n+1) {
				time.Sleep(time.Millisecond)
			}
			writes0, sent0 := stats.Writes.Load(), stats.WatchingSent.Load()
			var round int64
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				round++
				for i, id := range ids {
					h.PublishWatching(update.Watching{PostID: id, Watching: round%900 + int64(i) + 1, TS: round})
				}
				want := stats.FramesSent.Load() + 1
				h.Publish(update.Update{PostID: "barrier", Count: round, TS: round})
				for stats.FramesSent.Load() < want {
					time.Sleep(100 * time.Microsecond) // park: a spinning waiter would take the loop's core
				}
			}
			cpu := processCPU() - cpu0
			viewerRounds := float64(b.N) * float64(n)
			b.ReportMetric(float64(stats.Writes.Load()-writes0-int64(b.N))/viewerRounds, "writes/viewer")
			b.ReportMetric(float64(stats.WatchingSent.Load()-sent0)/viewerRounds, "watching-sent/viewer")
			b.ReportMetric(float64(cpu.Nanoseconds())/viewerRounds, "cpu-ns/viewer")
		})
	}
}

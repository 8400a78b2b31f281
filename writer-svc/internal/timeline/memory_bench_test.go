package timeline

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/redistest"
)

// BenchmarkTimelineMemory writes b.N post-hours of timeline the way the like script does (one
// BITFIELD INCRBY u32 and one EXPIREAT per second and series, minute keys) into a fresh
// redis-server and reports its used_memory per post-hour: "busy" has likes and three reaction
// kinds every second, "quiet" one like in the hour. docs/SCALING.md quotes it:
//
//	go test -run '^$' -bench BenchmarkTimelineMemory -benchtime 20x ./writer-svc/internal/timeline/
func BenchmarkTimelineMemory(b *testing.B) {
	for _, tt := range []struct {
		name    string
		series  []string
		seconds int
	}{
		{"busy", []string{rediskeys.TimelineLikes, "clap", "wow", "heart"}, 3600},
		{"quiet", []string{rediskeys.TimelineLikes}, 1},
	} {
		b.Run(tt.name, func(b *testing.B) {
			rdb := redistest.Start(b).Client(b)
			ctx := context.Background()
			before := usedMemory(b, rdb.Info(ctx, "memory").Val())
			hour := time.Now().Unix()/3600 + 1 // the keys expire an hour after it: none before the reading
			for i := 0; i < b.N; i++ {
				post := "post-" + strconv.Itoa(i)
				p := rdb.Pipeline()
				for _, s := range tt.series {
					for sec := int64(0); sec < int64(tt.seconds); sec++ {
						second := hour*3600 + sec
						key := keys.Timeline(post, s, second/60)
						p.Do(ctx, "BITFIELD", key, "OVERFLOW", "SAT", "INCRBY", "u32", "#"+strconv.FormatInt(second%60, 10), 1)
						p.ExpireAt(ctx, key, timeUnix(second/60*60+60+3600))
					}
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(usedMemory(b, rdb.Info(ctx, "memory").Val())-before)/float64(b.N), "B/post-hour")
		})
	}
}

func usedMemory(b *testing.B, info string) int64 {
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
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

// timeUnix is a unix second as time.Time, for EXPIREAT.
func timeUnix(s int64) time.Time { return time.Unix(s, 0) }

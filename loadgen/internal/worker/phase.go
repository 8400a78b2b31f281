package worker

import (
	"github.com/likes/likes/loadgen/internal/hist"
	"github.com/likes/likes/loadgen/internal/tally"
)

// latencyShards spreads latency recording over several histograms so viewers on different cores
// rarely add to the same cache line.
const latencyShards = 8

// phase is what a phase measures. It is replaced whole at Begin and read by every viewer through
// an atomic pointer, so recording takes no lock.
type phase struct {
	tallies []*tally.Tally // per post
	startUS int64
	endUS   int64
	latency [latencyShards]hist.Histogram
}

func newPhase(b *Begin) *phase {
	ph := &phase{startUS: b.WindowStartUS, endUS: b.WindowEndUS}
	ph.tallies = make([]*tally.Tally, len(b.Base))
	for p, base := range b.Base {
		ph.tallies[p] = tally.New(base)
	}
	return ph
}

// record counts one delivered event of post, received at nowUS; timed adds its latency.
func (ph *phase) record(post, shard int, count, ts, nowUS int64, timed bool) {
	if post < len(ph.tallies) {
		ph.tallies[post].Add(count)
	}
	if timed && ts >= ph.startUS && ts < ph.endUS {
		ph.latency[shard].Record(nowUS - ts)
	}
}

func (ph *phase) report(r *ReportRange) *Report {
	rep := &Report{Received: make([]int64, len(ph.tallies))}
	for p, t := range ph.tallies {
		if p < len(r.Lo) && p < len(r.Hi) {
			rep.Received[p] = t.Sum(r.Lo[p], r.Hi[p])
		}
		rep.Overflow += t.Overflow.Load()
	}
	var all hist.Histogram
	for i := range ph.latency {
		all.Merge(ph.latency[i].Snapshot())
	}
	rep.Latency = all.Snapshot()
	return rep
}

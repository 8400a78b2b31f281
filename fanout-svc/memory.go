package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// releaseIdleMemory gives heap that the node no longer uses back to the OS until ctx is done. A
// node's live heap is small and steady (viewer structs), but a burst of connects (a ramp, a
// reconnect storm) leaves megabytes of freed request buffers that the runtime's background
// scavenger returns only slowly; resident memory per viewer is what limits a node, so the node
// returns them one check after the burst is over (releasePolicy). The cost is one forced
// collection per burst, and otherwise at most one per releaseEvery. GOGC keeps Go's default of
// 100: with this release, 18,000 idle viewers measured 1.41 KiB each at GOGC=100, 1.45 at 200 and
// 2.25 at 50, whose tight goal leaves too little free heap to be worth returning
// (docs/BENCHMARKS.md). The soft memory limit is set by pkg/runtimelimits.
func releaseIdleMemory(ctx context.Context, viewers func() int64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},    // free spans still resident
		{Name: "/memory/classes/heap/objects:bytes"}, // live objects and garbage not yet collected
		{Name: "/gc/heap/live:bytes"},                // live at the last collection
	}
	start := viewers()
	policy := releasePolicy{viewers: start, lowest: start, released: time.Now()}
	t := time.NewTicker(releaseCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			metrics.Read(samples)
			free, objects, live := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
			// A burst's garbage is reclaimable before any collection has found it.
			if policy.due(now, viewers(), free+objects-min(objects, live), live) {
				debug.FreeOSMemory()
			}
		}
	}
}

const (
	// releaseCheck is how often the node looks at its viewers and its free heap: a burst's
	// memory goes back about this long after the burst ends.
	releaseCheck = time.Second
	// releaseEvery bounds the forced collections when viewers never stop arriving or leaving.
	releaseEvery = 10 * time.Second
)

// releasePolicy decides, one check at a time, when reclaimable heap (free, or garbage) is worth
// returning: when there is enough of it (over 8 MiB and over a quarter of the live heap) and
// either a connect burst has just settled or releaseEvery has passed since the last release. A
// burst is the viewer count at least doubled, and by at least burstViewers, over its lowest since
// the last release (a ramp, a reconnect storm after a restart, a node taking over a failed
// peer's viewers); it has settled when the count stopped moving for one check, so its garbage is
// all there. Smaller changes, departures
// and churn are left to the periodic release: each forced collection takes CPU from a busy node's
// writes, so it is spent where it buys back the memory of a crowd.
type releasePolicy struct {
	viewers  int64     // at the previous check
	lowest   int64     // the fewest viewers since the last release
	released time.Time // the last release, or the start
}

// burstViewers is the least growth that counts as a connect burst.
const burstViewers = 1000

func (p *releasePolicy) due(now time.Time, viewers int64, reclaimable, live uint64) bool {
	moving := viewers != p.viewers
	p.viewers = viewers
	p.lowest = min(p.lowest, viewers)
	grown := viewers - p.lowest
	burst := !moving && grown >= burstViewers && grown >= p.lowest
	worth := reclaimable > 8<<20 && reclaimable > live/4
	if !worth || (!burst && now.Sub(p.released) < releaseEvery) {
		return false
	}
	p.lowest, p.released = viewers, now
	return true
}

package ramp

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/likes/likes/loadgen/internal/hist"
	"github.com/likes/likes/loadgen/internal/likes"
	"github.com/likes/likes/loadgen/internal/report"
	"github.com/likes/likes/loadgen/internal/worker"
)

// missedMicros is what an acknowledgement that never reached a sampled viewer counts as in the
// latency quantiles: a minute, past any objective.
const missedMicros = 60_000_000

// displayed reads the phase's frames: what its single-post viewers received of the window's
// frames against what their nodes displayed, and the frames each viewer received a second on
// average. What a node displayed of a post is the most frames any viewer of the post there
// received, less one: the viewers of a big room take turns (fanout-svc paces them over the
// display gap), so the window's edges cut one frame more or fewer from each viewer's share. Each
// viewer is due that many and counts up to it.
func displayed(reps []worker.Reply, window float64) (due, got int64, perViewerPerSec float64) {
	type key struct{ post, node int }
	shown := map[key]int64{}
	for _, rep := range reps {
		for _, d := range rep.Report.Displays {
			k := key{d.Post, d.Node}
			for n := range d.Frames {
				shown[k] = max(shown[k], n)
			}
		}
	}
	viewers, frames := 0, int64(0)
	for _, rep := range reps {
		for _, d := range rep.Report.Displays {
			owed := max(shown[key{d.Post, d.Node}]-1, 0)
			for n, vs := range d.Frames {
				due += owed * int64(vs)
				got += min(n, owed) * int64(vs)
				frames += n * int64(vs)
			}
			viewers += d.Viewers
		}
	}
	if viewers > 0 {
		perViewerPerSec = float64(frames) / float64(viewers) / window
	}
	return due, got, perViewerPerSec
}

// displayHeld reports whether a node's display rate held frames back in the window.
func displayHeld(f figures) bool {
	for n := range f.s0.nodes {
		if f.s1.nodes[n].DisplayHeld > f.s0.nodes[n].DisplayHeld { // false for NaN
			return true
		}
	}
	return false
}

// fillDisplayed judges the phase by what the nodes displayed: in a reactions phase always, in a
// phase of likes when a node's display rate held frames back, since a node that shows a post's
// newest count a few times a second instead of every like is doing what it promises. Delivery is
// then the window's frames each viewer received against what its node displayed, the latency is
// from a like's or reaction's acknowledgement to the first frame at a sampled viewer that
// includes it (every one of the window's, at each), and convergence (viewers on the final counts,
// reactions included) checks that the newest value reached everyone.
func (r *Ramp) fillDisplayed(ph *report.Phase, f figures) {
	window := r.cfg.Window.Seconds()
	acks := f.win.Acks()
	var sampled []worker.Sampled
	for _, rep := range f.reps {
		sampled = append(sampled, rep.Report.Sampled...)
	}
	due, got, perViewer := displayed(f.reps, window)
	ph.EventsExpected, ph.EventsReceived = due, got
	ph.DeliveryPct = report.Float(percent(got, due))
	ph.UpdatesPerSec = report.Float(perViewer)
	lat, missed := ackLatency(acks, sampled, r.cfg.React != nil)
	ph.LatencyP50Ms, ph.LatencyP95Ms, ph.LatencyP99Ms, ph.LatencyP999Ms = quantilesMs(lat)
	ph.LatencySamples = int64(lat.Count())
	if missed > 0 {
		ph.Notes = append(ph.Notes, fmt.Sprintf("%d (acknowledgement, sampled viewer) pairs never got a frame that includes it", missed))
	}
	if r.cfg.React == nil {
		ph.Notes = append(ph.Notes, fmt.Sprintf("the nodes' display rate held frames back: delivery counts the frames they displayed "+
			"(%.1f a second per viewer), latency is from each like's acknowledgement to the first frame that includes it, on %d sampled viewers",
			perViewer, len(sampled)))
		return
	}
	versions := map[[2]int64]struct{}{}
	for _, a := range acks {
		versions[[2]int64{int64(a.Post), a.TS}] = struct{}{}
	}
	ph.Reactions = &report.Reactions{
		Audience: r.cfg.React.people(ph.ConnsWanted), Acked: int64(len(acks)),
		UpdatesPerSec: float64(len(versions)) / window, DisplayPerViewerPerSec: perViewer,
		SampledViewers: len(sampled), LatencySamples: ph.LatencySamples, Missed: missed,
	}
}

// ackLatency measures, at each sampled viewer, everything acknowledged in the window on its post:
// from the acknowledgement to the arrival of the first frame that includes it, the first whose
// version is the reaction's or later (byVersion), or whose count is the like's or more (a fresh
// user's like raises the count for good). A frame that came before the acknowledgement (the
// publish overtook the answer) counts as 0; an acknowledgement no frame includes counts as a
// minute (missedMicros) and is returned among the missed.
func ackLatency(acks []likes.Ack, sampled []worker.Sampled, byVersion bool) (*hist.Histogram, int64) {
	key, frameKey := func(a likes.Ack) int64 { return a.Count }, 0
	if byVersion {
		key, frameKey = func(a likes.Ack) int64 { return a.TS }, 1
	}
	acks = slices.Clone(acks)
	slices.SortFunc(acks, func(a, b likes.Ack) int {
		if a.Post != b.Post {
			return a.Post - b.Post
		}
		return cmp.Compare(key(a), key(b))
	})
	var h hist.Histogram
	var missed int64
	for _, s := range sampled {
		lo, _ := slices.BinarySearchFunc(acks, s.Post, func(a likes.Ack, p int) int { return a.Post - p })
		i := 0
		for _, a := range acks[lo:] {
			if a.Post != s.Post {
				break
			}
			for i < len(s.Frames) && s.Frames[i][frameKey] < key(a) {
				i++
			}
			if i == len(s.Frames) {
				missed++
				h.Record(missedMicros)
				continue
			}
			h.Record(max(s.Frames[i][2]-a.AckUS, 0))
		}
	}
	return &h, missed
}

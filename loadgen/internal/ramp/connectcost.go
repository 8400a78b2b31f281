package ramp

import (
	"math"

	"github.com/likes/likes/loadgen/internal/nodemetrics"
)

// connectCost returns the CPU microseconds all nodes spent between before and after, per viewer
// that connected meanwhile; NaN when none connected or a node was not read both times. It is the
// figure "node CPU per connect" (docs/BENCHMARKS.md): a connect ramp's whole cost on the nodes,
// including what they do for the viewers already there while the others arrive.
func connectCost(before, after []nodemetrics.Sample, connected int) float64 {
	if connected <= 0 || len(before) != len(after) {
		return math.NaN()
	}
	var cpu float64
	for n := range before {
		if before[n].At.IsZero() || after[n].At.IsZero() {
			return math.NaN()
		}
		cpu += after[n].CPUSeconds - before[n].CPUSeconds
	}
	return cpu / float64(connected) * 1e6
}

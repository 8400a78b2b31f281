package dockertest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The scale step asserts a fact rather than a ratio: four replicas hold, clean, the load that
// broke one (the search at one replica brackets its capacity within 10%, so this is growth of at
// least about 1.1x, and it fails when the replicas add no capacity). Issue 17's floors (1.8x at
// two replicas, 2.5x at four) are benchmark figures, judged as medians of scripts/scale-bench.sh
// runs (docs/BENCHMARKS.md): one search on this 2-core machine moves 20-30% between runs, because
// the host's other core (generator, writers, Redis, haproxy, the engine) is what fills up at four
// replicas, and a suite asserting the floor on one run would fail on that noise.

// stepScale: the README's capacity search at one replica and at four, each node limited to
// FANOUT_CPU_LIMIT (a box of its own): capacity grows with the replicas, each node runs one
// Go P on its quarter of a CPU, the README's `loadgen compare` of one replica and four names
// both node counts and their capacities, and the suite's viewers, opened through haproxy, land
// on every node.
func stepScale(t *testing.T, s *stack, c *crowd, got *figures) {
	s.mustCompose(10*time.Minute, "--profile", "bench", "build", "loadgen")
	s.checkNodeRuntime(t)
	one := s.ramp(t, 1)
	four := s.scaleAndRamp(t, 4, got)
	got.add(t, "ramp at 1 replica (FANOUT_CPU_LIMIT=%s): %s\n%s", fanoutCPULimit, one.capacity(), one.table())
	got.add(t, "ramp at 4 replicas (FANOUT_CPU_LIMIT=%s): %s\n%s", fanoutCPULimit, four.capacity(), four.table())
	g4 := float64(four.Capacity.Conns) / float64(one.Capacity.Conns)
	got.add(t, "capacity at 1 and 4 replicas: %d and %d viewers (%.2fx)", one.Capacity.Conns, four.Capacity.Conns, g4)
	switch {
	case one.Capacity.Broke == nil:
		t.Errorf("the search at 1 replica stopped (%s) before any step broke: no capacity to scale from", one.Capacity.Stopped)
	case four.Capacity.Conns < one.Capacity.Broke.Conns:
		t.Errorf("4 replicas hold %d viewers clean, fewer than the %d that broke 1 replica (%s): the replicas added no capacity",
			four.Capacity.Conns, one.Capacity.Broke.Conns, strings.Join(one.Capacity.Broke.Reasons, ", "))
	}
	got.add(t, "loadgen compare, 1 replica vs 4: %s", s.compare(t, one, four))

	c.open(s.stream, 20)
	s.like(c.post, "seed")
	c.awaitCount(t, 1, time.Now(), 15*time.Second, "20 viewers through haproxy")
	per := s.viewersPerNode()
	for name, n := range per {
		if n < 4 {
			t.Errorf("node %s holds %d viewers of the 20 opened through haproxy; want about 5 each (leastconn), got %v", name, n, per)
		}
	}
}

// scaleAndRamp runs the README's scale command for n replicas, waits until haproxy has all of
// them UP, and runs the README's rerun.
func (s *stack) scaleAndRamp(t *testing.T, n int, got *figures) rampResult {
	t.Helper()
	start := time.Now()
	s.mustCompose(5*time.Minute, strings.Fields(fmt.Sprintf(scaleCommand, n))...)
	s.awaitHealthy("fanout-svc", n, time.Minute)
	s.awaitBackends(n, 30*time.Second)
	got.add(t, "scale to %d: %d healthy nodes UP in haproxy %v after the command", n, n, time.Since(start).Round(100*time.Millisecond))
	return s.ramp(t, n)
}

// checkNodeRuntime reads, from a node's own /metrics, what its Go runtime made of the
// container's limits: one P for a quarter of a CPU (Go's default would be 2), and a soft memory
// limit at 90% of FANOUT_MEM_LIMIT.
func (s *stack) checkNodeRuntime(t *testing.T) {
	t.Helper()
	for _, n := range s.nodes() {
		procs, memlimit := n.metric("go_sched_gomaxprocs_threads"), n.metric("go_gc_gomemlimit_bytes")
		if procs != 1 || memlimit != fanoutMemLimitBytes/10*9 {
			t.Errorf("node %s: GOMAXPROCS %v, GOMEMLIMIT %v; want 1 and %d (90%% of %s) under FANOUT_CPU_LIMIT=%s",
				n.name, procs, memlimit, fanoutMemLimitBytes/10*9, fanoutMemLimit, fanoutCPULimit)
		}
	}
}

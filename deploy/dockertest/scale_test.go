package dockertest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Growth the scale step asserts, from issue 17: four replicas at a quarter CPU each use one of
// this machine's two cores, the generator, Redis and the writers the other, so capacity must
// grow with the replicas until the cores run out.
const (
	minGrowthAt2 = 1.8
	minGrowthAt4 = 2.5
)

// stepScale: the README's capacity search at one replica, at two and at four, each node limited
// to FANOUT_CPU_LIMIT (a box of its own): capacity grows with the replicas, each node runs one
// Go P on its quarter of a CPU, the README's `loadgen compare` of one replica and four names
// both node counts and their capacities, and the suite's viewers, opened through haproxy, land
// on every node.
func stepScale(t *testing.T, s *stack, c *crowd, got *figures) {
	s.mustCompose(10*time.Minute, "--profile", "bench", "build", "loadgen")
	s.checkNodeRuntime(t)
	one := s.ramp(t, 1)
	two := s.scaleAndRamp(t, 2, got)
	four := s.scaleAndRamp(t, 4, got)
	for _, r := range []struct {
		name string
		res  rampResult
	}{{"1 replica", one}, {"2 replicas", two}, {"4 replicas", four}} {
		got.add(t, "ramp at %s (FANOUT_CPU_LIMIT=%s): %s\n%s", r.name, fanoutCPULimit, r.res.capacity(), r.res.table())
	}
	base := float64(one.Capacity.Conns)
	g2, g4 := float64(two.Capacity.Conns)/base, float64(four.Capacity.Conns)/base
	got.add(t, "capacity at 1, 2, 4 replicas: %d, %d, %d viewers (%.2fx, %.2fx)", one.Capacity.Conns, two.Capacity.Conns, four.Capacity.Conns, g2, g4)
	if g2 < minGrowthAt2 || g4 < minGrowthAt4 {
		t.Errorf("capacity grew %.2fx at 2 replicas and %.2fx at 4; want at least %.1fx and %.1fx", g2, g4, minGrowthAt2, minGrowthAt4)
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

package dockertest

import (
	"encoding/json"
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

// stepScale: the capacity search (docs/LOADTESTING.md) at one replica and at four, each node
// limited to FANOUT_CPU_LIMIT (a box of its own): capacity grows with the replicas, each node
// runs one Go P on its quarter of a CPU, `loadgen compare` of one replica and four names both
// node counts and their capacities, and the suite's viewers, opened through haproxy, land on
// every node.
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
		// The search's path is noisy (one step it grows through can hit a stall of the shared
		// host core: a CI run broke at 125 viewers on 4 nodes after 1 node had held 250), so the
		// fact itself is asked once more directly: one phase at the load that broke 1 replica.
		if broke := s.holds(t, one.Capacity.Broke.Conns); len(broke) > 0 {
			t.Errorf("4 replicas hold %d viewers clean in the search and break at the %d that broke 1 replica (%s), again in a phase of that load alone (%s): the replicas added no capacity",
				four.Capacity.Conns, one.Capacity.Broke.Conns, strings.Join(one.Capacity.Broke.Reasons, ", "), strings.Join(broke, ", "))
		} else {
			got.add(t, "4 replicas held the %d viewers that broke 1 replica clean in a phase of that load alone (the search had stopped at %d)",
				one.Capacity.Broke.Conns, four.Capacity.Conns)
		}
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

// holds runs one phase of the README's ramp at conns viewers (no search) and returns what of the
// objective it broke, none when it met it.
func (s *stack) holds(t *testing.T, conns int) []string {
	t.Helper()
	cmd := strings.Replace(rerunCommand, "--until-break --conns 250", fmt.Sprintf("--conns %d", conns), 1)
	if cmd == rerunCommand {
		t.Fatalf("rerunCommand %q no longer names the search's first step", rerunCommand)
	}
	out := s.mustCompose(15*time.Minute, strings.Fields(cmd+" "+rampShort)...)
	var res rampResult
	i := strings.Index(out, "{")
	if i < 0 || json.Unmarshal([]byte(out[i:]), &res) != nil || len(res.Phases) != 1 {
		t.Fatalf("loadgen printed no one-phase JSON result:\n%s", tailString(out, 4000))
	}
	return res.Phases[0].Broke
}

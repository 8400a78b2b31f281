package ramp

import (
	"math"
	"testing"
	"time"
)

// TestSearchFindsTheBreakWithinPrecision drives the search's choice of loads against a
// deployment that breaks above a known capacity, and checks that it brackets it within 10%.
func TestSearchFindsTheBreakWithinPrecision(t *testing.T) {
	s := &Search{Factor: 2, Precision: 0.1, MaxSteps: 20, MaxTime: time.Hour}
	for _, capacity := range []float64{100, 250, 1300, 6400, 9999} {
		b := bracket{broken: math.Inf(1), cleanStep: -1, brokenStep: -1}
		load, steps, why := 250.0, 0, ""
		for ; steps < s.MaxSteps && why == ""; steps++ {
			if load <= capacity {
				b.clean, b.cleanStep = load, steps
			} else if load < b.broken {
				b.broken, b.brokenStep = load, steps
			}
			load, why = s.next(&b, load, 1)
			load = math.Round(load)
		}
		if why != "within 10%" {
			t.Fatalf("capacity %v: stopped %q after %d steps; want within 10%%", capacity, why, steps)
		}
		if b.clean > capacity || b.broken <= capacity || b.broken-b.clean > 0.1*b.clean {
			t.Errorf("capacity %v: bracket [%v, %v]; want clean <= capacity < broken within 10%%", capacity, b.clean, b.broken)
		}
		if steps > 12 { // the default --max-steps
			t.Errorf("capacity %v: %d steps; want at most 12", capacity, steps)
		}
	}
}

func TestSearchGivesUpWhenNothingIsClean(t *testing.T) {
	s := &Search{Factor: 2, Precision: 0.1}
	b := bracket{broken: math.Inf(1), cleanStep: -1, brokenStep: -1}
	load, why := 4.0, ""
	for range 10 {
		b.broken = load
		if load, why = s.next(&b, load, 1); why != "" {
			break
		}
	}
	if why != "nothing clean" {
		t.Errorf("stopped %q; want nothing clean", why)
	}
}

func TestHoldersCountsNodesPerPost(t *testing.T) {
	// 10 posts on 4 nodes: viewer i watches post i%10 on node (i/10)%4.
	nodes, viewers := holders(25, 10, 4, 0)
	if nodes[0] != 3 || nodes[5] != 2 || viewers[0] != 3 || viewers[9] != 2 {
		t.Errorf("holders(25, 10, 4) = %v, %v; want post 0 on 3 nodes with 3 viewers, post 9 on 2 with 2", nodes, viewers)
	}
	nodes, _ = holders(4000, 10, 4, 0)
	for p, n := range nodes {
		if n != 4 {
			t.Errorf("post %d on %d nodes; want 4", p, n)
		}
	}
}

package main

import (
	"testing"
	"time"
)

// TestReleasePolicy walks the policy through a connect burst, a steady node and endless churn.
func TestReleasePolicy(t *testing.T) {
	const big, live = 64 << 20, 16 << 20 // reclaimable and live heap, bytes
	start := time.Unix(1000, 0)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		name        string
		second      int
		viewers     int64
		reclaimable uint64
		want        bool
	}{
		{"burst under way", 1, 5000, big, false},
		{"burst still under way", 2, 19000, big, false},
		{"burst over: release", 3, 19000, big, true},
		{"steady after the release", 4, 19000, big, false},
		{"steady, before releaseEvery", 12, 19000, big, false},
		{"steady, releaseEvery passed", 13, 19000, big, true},
		{"a few viewers leave", 14, 18990, big, false},
		{"settled, but too little to return", 15, 18990, 4 << 20, false},
		{"settled, a quarter of live or less", 16, 18990, live / 4, false},
		{"settled and enough since", 17, 18990, big, true},
		{"churn", 18, 18000, big, false},
		{"churn", 22, 19000, big, false},
		{"churn, releaseEvery passed", 27, 18000, big, true},
	}
	p := releasePolicy{viewers: 0, released: start}
	for _, s := range steps {
		if got := p.due(at(s.second), s.viewers, s.reclaimable, live); got != s.want {
			t.Fatalf("second %d (%s): due = %v, want %v", s.second, s.name, got, s.want)
		}
	}
}

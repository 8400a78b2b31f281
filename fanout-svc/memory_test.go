package main

import (
	"testing"
	"time"
)

// TestReleasePolicy walks the policy through a connect burst, a steady node, small changes,
// departures and returns, and churn.
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
		{"nine thousand more: not doubled", 14, 28000, big, false},
		{"settled: too small a burst", 15, 28000, big, false},
		{"half leave", 16, 10000, big, false},
		{"settled after leaving: not a burst", 17, 10000, big, false},
		{"twice as many come back", 18, 20000, big, false},
		{"back: a burst over the lowest, but too little to return", 19, 20000, 4 << 20, false},
		{"a quarter of live or less", 20, 20000, live / 4, false},
		{"enough to return", 21, 20000, big, true},
		{"churn", 22, 18000, big, false},
		{"churn", 26, 19000, big, false},
		{"churn, releaseEvery passed", 31, 18000, big, true},
		{"five hundred arrive", 32, 18500, big, false},
		{"settled: a burst needs a thousand", 33, 18500, big, false},
	}
	p := releasePolicy{released: start}
	for _, s := range steps {
		if got := p.due(at(s.second), s.viewers, s.reclaimable, live); got != s.want {
			t.Fatalf("second %d (%s): due = %v, want %v", s.second, s.name, got, s.want)
		}
	}
}

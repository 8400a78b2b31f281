package ramp

import (
	"testing"

	"github.com/likes/likes/loadgen/internal/likes"
	"github.com/likes/likes/loadgen/internal/worker"
)

func TestAckLatency(t *testing.T) {
	acks := []likes.Ack{
		{Post: 0, Count: 2, TS: 200, AckUS: 1_000},
		{Post: 0, Count: 1, TS: 100, AckUS: 900},
		{Post: 0, Count: 3, TS: 300, AckUS: 2_000}, // no frame reaches it
		{Post: 1, Count: 1, TS: 100, AckUS: 500},
	}
	sampled := []worker.Sampled{
		// [count, ts, arrival]: the frame of version 200 (count 2) came 4 ms after the second
		// reaction's answer; the frame of version 100 overtook the first's answer.
		{Post: 0, Frames: [][3]int64{{1, 100, 850}, {2, 200, 5_000}}},
		{Post: 1, Frames: [][3]int64{{1, 150, 1_500}}},
	}
	for _, byVersion := range []bool{true, false} {
		h, missed := ackLatency(acks, sampled, byVersion)
		if missed != 1 || h.Count() != 4 {
			t.Fatalf("byVersion %v: missed %d of %d; want 1 of 4", byVersion, missed, h.Count())
		}
		// Sorted: 0 (overtaken), 1,000 (post 1), 4,000, and the missed one at a minute.
		if p50 := h.Quantile(0.5); p50 < 900 || p50 > 1_100 {
			t.Errorf("byVersion %v: p50 %v us; want about 1,000", byVersion, p50)
		}
		if p99 := h.Quantile(0.99); p99 < missedMicros*0.9 {
			t.Errorf("byVersion %v: p99 %v us; want the missed one's minute", byVersion, p99)
		}
	}
}

func TestDisplayedAllowsOneFrameAtTheWindowEdges(t *testing.T) {
	reps := []worker.Reply{
		{Report: &worker.Report{Displays: []worker.Display{
			{Post: 0, Node: 0, Viewers: 3, Frames: map[int64]int{10: 2, 9: 1}},
			{Post: 0, Node: 1, Viewers: 2, Frames: map[int64]int{4: 1, 2: 1}},
		}}},
		{Report: &worker.Report{Displays: []worker.Display{{Post: 0, Node: 0, Viewers: 1, Frames: map[int64]int{11: 1}}}}},
	}
	due, got, perViewer := displayed(reps, 2)
	// Node 0 displayed 11 (the most one viewer got), so each of its 4 viewers is owed 10: one
	// got 9. Node 1's 2 viewers are owed 3 each: one got 2.
	if due != 4*10+2*3 || got != 10+10+9+10+3+2 {
		t.Errorf("due %d, got %d; want 46, 44", due, got)
	}
	if want := float64(10+10+9+11+4+2) / 6 / 2; perViewer != want {
		t.Errorf("per viewer %v/s; want %v", perViewer, want)
	}
}

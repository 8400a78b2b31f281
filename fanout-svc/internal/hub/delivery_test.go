package hub

import (
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// TestDeliveryHistogramMeasuresFromTheUpdatesVersion: an update stored in Redis 40 ms before it
// is published reaches the viewer, and the node's delivery histogram holds one sample, over
// 25 ms, and within 100 ms when the test itself took less than that.
func TestDeliveryHistogramMeasuresFromTheUpdatesVersion(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	_, c := addViewer(t, h, false, "42")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "snapshot", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 1 })
	stored := time.Now().Add(-40 * time.Millisecond)
	h.Publish(update.Update{PostID: "42", Count: 1, TS: stored.UnixMicro()})
	poll.Until(t, 10*time.Second, "the update", func() bool { u, _ := r.last("42"); return u.Count == 1 })
	var count uint64
	var cumulative map[float64]uint64
	poll.Until(t, 10*time.Second, "a delivery sample", func() bool {
		count, _, cumulative = h.Stats().Delivery.Snapshot()
		return count > 0
	})
	elapsed := time.Since(stored)
	if count != 1 {
		t.Fatalf("delivery samples = %d; want 1 (one post, one write pass)", count)
	}
	if cumulative[0.025] != 0 {
		t.Errorf("the sample is at most 25 ms; want at least the 40 ms since the change was stored (%v)", cumulative)
	}
	if elapsed < 100*time.Millisecond && cumulative[0.1] != 1 {
		t.Errorf("the sample is over 100 ms though only %v passed since the change was stored (%v)", elapsed, cumulative)
	}
}

func TestDeliveryTallyBuckets(t *testing.T) {
	var tally deliveryTally
	for _, us := range []int64{-5, 0, 1000, 1001, 100_000, 6_000_000} {
		tally.observe(us)
	}
	var d Delivery
	tally.flushTo(&d)
	count, sum, cumulative := d.Snapshot()
	if count != 6 || sum != (1000+1001+100_000+6_000_000)/1e6 {
		t.Fatalf("count %d, sum %v; want 6 samples summing to 6.102001 s (a negative one counts as 0)", count, sum)
	}
	for le, want := range map[float64]uint64{0.001: 3, 0.0025: 4, 0.1: 5, 5: 5} {
		if cumulative[le] != want {
			t.Errorf("le=%v: %d samples; want %d (%v)", le, cumulative[le], want, cumulative)
		}
	}
}

package hub

import "testing"

// TestDueListVisitsEachViewerAtItsTickOnce: a viewer is visited at the first tick at or after its
// time, once, however often it was filed; filed earlier, it moves to the earlier tick and its later
// entry is cleared; a doomed or dropped viewer is never visited, nor held; and one filed again
// during its visit waits for a later take.
func TestDueListVisitsEachViewerAtItsTickOnce(t *testing.T) {
	const tick = 10
	d := newDueList(tick, 0)
	a, b, c, gone := &viewer{fd: 1}, &viewer{fd: 2}, &viewer{fd: 3}, &viewer{fd: 4}
	d.file(a, 25) // tick 3
	d.file(a, 28) // later: a keeps tick 3
	d.file(b, 55) // tick 6 ...
	d.file(b, 12) // ... then earlier: tick 2, its tick-6 entry cleared
	if d.ticks[6][0] != nil {
		t.Fatal("b still held by its later tick-6 entry after moving to tick 2")
	}
	d.file(c, 0) // tick 1: ticks count from 1
	d.file(gone, 5)
	gone.doomed = true

	var visits []int
	visit := func(v *viewer) { visits = append(visits, v.fd) }
	take := func(now int64, want ...int) {
		t.Helper()
		visits = nil
		d.take(now, visit)
		if len(visits) != len(want) {
			t.Fatalf("take(%d) visited %v; want %v", now, visits, want)
		}
		for i := range want {
			if visits[i] != want[i] {
				t.Fatalf("take(%d) visited %v; want %v", now, visits, want)
			}
		}
	}
	take(9)        // tick 0: nothing
	take(19, 3)    // tick 1: c; gone is doomed
	take(30, 2, 1) // ticks 2 (b) and 3 (a: its 25 rounds up to 30)
	d.file(c, 50)  // tick 5 ...
	d.drop(c)      // ... and removed from the loop
	if d.ticks[5][0] != nil {
		t.Fatal("c still held by its tick-5 entry after drop")
	}
	take(100) // b's cleared tick-6 entry, c's dropped one: nothing
	if len(d.ticks) != 0 {
		t.Fatalf("%d ticks left filed; want none", len(d.ticks))
	}

	// Filed again during its visit, for a time already past: the next take visits it, not this one.
	d.file(a, 115) // tick 12
	n := 0
	d.take(120, func(v *viewer) {
		n++
		d.file(v, 0)
	})
	if n != 1 {
		t.Fatalf("visited %d times in one take; want 1", n)
	}
	take(130, 1)
}

// TestIdleViewerVisitedOncePerHeartbeat: the sweep visits an idle viewer once a heartbeat
// interval, not at every tick (a tick is a quarter of it): what makes idle viewers cheap.
func TestIdleViewerVisitedOncePerHeartbeat(t *testing.T) {
	const hb, tick = 1000, 250
	d := newDueList(tick, 0)
	v := &viewer{fd: 1}
	d.file(v, hb)
	visits := 0
	for now := int64(0); now <= 10*hb; now += tick {
		d.take(now, func(v *viewer) {
			visits++
			v.lastWrite = now // its heartbeat
			d.file(v, now+hb)
		})
	}
	if visits != 10 {
		t.Fatalf("%d visits over 10 heartbeat intervals (40 ticks); want 10", visits)
	}
}

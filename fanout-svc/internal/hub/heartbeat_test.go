package hub

import (
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

// TestNoPingWhileFramesFlow: the sweep pings a viewer only when nothing was written to it for a
// heartbeat interval (lastWrite), so a viewer that gets frames more often than that never gets a
// ping, whichever path wrote them: a write per update (no flush window), a batch flush, a
// multi-post viewer's batch. An idle viewer of another post on the same loop is the control:
// its pings show that the sweep ran, heartbeat after heartbeat, while frames flowed.
func TestNoPingWhileFramesFlow(t *testing.T) {
	const heartbeat = 250 * time.Millisecond
	for _, tc := range []struct {
		name   string
		window time.Duration
		multi  bool
	}{
		{"direct", 0, false},
		{"batched", 5 * time.Millisecond, false},
		{"batched-multi", 5 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHub(t, Config{Loops: 1, Heartbeat: heartbeat, FlushWindow: tc.window})
			_, busyConn := addViewer(t, h, tc.multi, "busy")
			_, idleConn := addViewer(t, h, false, "idle")
			busy, idle := startReader(t, busyConn), startReader(t, idleConn)
			pace := time.NewTicker(heartbeat / 10) // frames ten times per interval
			defer pace.Stop()
			for count := int64(1); idle.conn.Comments() < 3; count++ {
				h.Publish(upd("busy", count))
				poll.Until(t, 10*time.Second, "the update at the busy viewer", func() bool {
					u, ok := busy.last("busy")
					return ok && u.Count >= count
				})
				<-pace.C
			}
			if pings := busy.conn.Comments(); pings != 0 {
				t.Errorf("the busy viewer got %d pings over three heartbeat intervals of frames; want none", pings)
			}
		})
	}
}

package worker

import (
	"testing"
	"time"
)

// streams is how many streams the server holds now.
func (s *sseServer) streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// TestReconnectMovesALostNodesViewers ends every stream of one of three nodes: its 10 viewers
// must reconnect to the other two, 5 each, take their place in the phase (the phase converges on
// all 30), and count as moved, not dropped.
func TestReconnectMovesALostNodesViewers(t *testing.T) {
	a, b, c := newSSEServer(t, 0), newSSEServer(t, 0), newSSEServer(t, 0)
	w := startWorker(t)
	call(t, w, Request{Op: OpInit, Init: &Init{Nodes: []string{a.URL, b.URL, c.URL}, Posts: []string{"p"}, Reconnect: true}})
	call(t, w, Request{Op: OpConnect, Connect: &Connect{First: 0, Count: 30}})
	waitStatus(t, w, func(s *Status) bool { return s.Open == 30 })
	now := time.Now().UnixMicro()
	call(t, w, Request{Op: OpBegin, Begin: &Begin{Base: []int64{0}, WindowStartUS: now, WindowEndUS: now + 60e6}})

	a.dropAll()
	st := waitStatus(t, w, func(s *Status) bool { return s.MovedOpen == 10 && s.MovedCurrentUS > 0 })
	if st.Moved != 10 || st.Dropped != 0 || st.Open != 30 {
		t.Fatalf("status %+v; want 10 moved and admitted, none dropped, 30 open", st)
	}
	if st.MovedFirstUS < now || st.MovedCurrentUS < st.MovedFirstUS {
		t.Errorf("moved first %d, current %d; want the first stream's end after the phase began (%d) and the last current after it",
			st.MovedFirstUS, st.MovedCurrentUS, now)
	}
	if nb, nc := b.streams(), c.streams(); nb != 15 || nc != 15 {
		t.Errorf("streams on the other nodes: %d and %d; want 15 each (the lost node's 10 spread evenly)", nb, nc)
	}

	b.like("p", time.Now().UnixMicro())
	c.like("p", time.Now().UnixMicro())
	conv := call(t, w, Request{Op: OpConverge, Converge: &Converge{Final: []int64{1}, TimeoutMS: 10000}}).Converge
	if conv.Converged != 30 || conv.Total != 30 {
		t.Errorf("converged %d of %d; want 30 of 30: the moved viewers take the lost ones' places", conv.Converged, conv.Total)
	}
}

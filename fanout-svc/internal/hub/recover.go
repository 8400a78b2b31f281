package hub

import "go.uber.org/zap"

// A panic in the loop's work for one viewer (its write, its heartbeat and stall check, its
// socket's events, its share of a batch or a paced frame, its removal) is a bug reached by that
// viewer's state. Unrecovered it would end the process, and with it every viewer of every loop;
// recovered where that viewer's work begins, it closes that viewer alone, counts it
// (Stats.Panics) and logs it, and the loop goes on with the next viewer. fastaccept does the same
// for a connection whose head a loop reads.

// recoverViewer, deferred where one viewer's work begins, turns a panic there into v's removal.
func (s *loop) recoverViewer(v *viewer) {
	if rec := recover(); rec != nil {
		s.panicked(rec)
		s.doom(v)
	}
}

// recoverRemoval, deferred in removeViewer and in each of its calls out of the loop, recovers a
// panic there: the viewer is as far out of the loop as its removal got, and the rest of the
// removal (its connection, its posts, its OnClose) still runs.
func (s *loop) recoverRemoval() {
	if rec := recover(); rec != nil {
		s.panicked(rec)
	}
}

// panicked counts a recovered panic and logs the first and every hundredth, with its stack, so
// that a bug every viewer reaches cannot flood the log.
func (s *loop) panicked(rec any) {
	if n := s.hub.stats.Panics.Add(1); n == 1 || n%100 == 0 {
		s.hub.log.Error("panic serving a viewer on an event loop; the viewer was closed, the loop goes on",
			zap.Any("panic", rec), zap.Int("loop", s.id), zap.Int64("panics", n), zap.Stack("stack"))
	}
}

package hub

import (
	"math/rand/v2"
	"time"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/pkg/sse"
)

// drain is a loop's share of Hub.Drain: its viewers are closed evenly between start and end.
type drain struct {
	active     bool
	start, end int64
	total      int // viewers when the drain started
}

// runTimers handles paced frames, the flush window, rate-capped posts, heartbeats, stalls and draining.
func (s *loop) runTimers() {
	if len(s.paced) > 0 {
		s.advancePacing()
	}
	if len(s.held) > 0 {
		s.releaseHeld()
	}
	if len(s.batch.posts) > 0 && (s.cfg.FlushWindow == 0 || s.now >= s.batch.flushAt) {
		s.flushBatches()
	}
	if s.drain.active {
		s.drainStep()
	}
	s.shedStep()
	if s.now >= s.nextTick {
		s.nextTick = s.now + s.tick
		s.sweep()
	}
	if s.intake != nil && s.intake.Waiting() {
		s.intake.Tick() // heads past their timeout; accepting again after a pause
	}
}

// sweep sends viewers that heard nothing for a heartbeat interval a heartbeat (their owed
// watching frames, else a ping) and drops viewers whose socket has been full for longer than the
// stall timeout. It visits only the viewers due by now (dueList), each filed again at its next
// time; no timer per viewer.
func (s *loop) sweep() {
	s.due.take(s.now, s.check)
}

// check is the sweep's visit of one viewer.
func (s *loop) check(v *viewer) {
	defer s.recoverViewer(v)
	hb := int64(s.cfg.Heartbeat)
	stall := int64(s.cfg.StallTimeout)
	switch {
	case v.blocked():
		if stall > 0 && s.now-v.blockedSince > stall {
			s.counts.stalled++
			s.doom(v)
			return
		}
	case s.now-v.lastWrite >= hb:
		s.heartbeat(v) // its owed watching frames, or a ping (watching.go)
	}
	s.fileDue(v)
}

// fileDue files v for the sweep at its next heartbeat, or at the next tick while its socket is
// full (it gets no heartbeat then; each tick checks it for the stall timeout, as before).
func (s *loop) fileDue(v *viewer) {
	if v.doomed {
		return
	}
	if v.blocked() {
		s.due.file(v, s.now+s.tick)
		return
	}
	s.due.file(v, v.lastWrite+int64(s.cfg.Heartbeat))
}

// drainStep closes the share of viewers due by now, each after a short jittered retry hint so
// that browsers reconnect (elsewhere) soon but not all at once.
func (s *loop) drainStep() {
	d := &s.drain
	span := max(d.end-d.start, 1)
	due := d.total
	if s.now < d.end {
		due = int(int64(d.total) * (s.now - d.start) / span)
	}
	closed := d.total - len(s.viewers)
	for _, v := range s.viewers {
		if closed >= due {
			break
		}
		if v.doomed {
			continue
		}
		s.sendAway(v)
		closed++
	}
}

// sendAway closes v after a short jittered retry hint (when its socket can take one), so that a
// drained or shed viewer reconnects elsewhere soon but not at the same moment as the others.
func (s *loop) sendAway(v *viewer) {
	defer s.recoverViewer(v)
	if !v.blocked() {
		var b [32]byte
		_, _ = epoll.Write(v.fd, sse.AppendRetry(b[:0], 250+rand.Int64N(1000)))
	}
	s.doom(v)
}

// timeoutMs is how long the loop may sleep in epoll_wait before a timer is due.
func (s *loop) timeoutMs() int {
	next := s.nextTick
	if s.batch.flushAt != 0 {
		next = min(next, s.batch.flushAt)
	}
	for _, sp := range s.held {
		next = min(next, sp.nextAllowed)
	}
	if len(s.paced) > 0 {
		next = min(next, s.now+pacedWake)
	}
	if s.intake != nil && s.intake.Waiting() {
		next = min(next, s.now+int64(s.intake.TickEvery()))
	}
	if s.drain.active || s.shed.active() {
		next = min(next, s.now+int64(10*time.Millisecond))
	}
	d := next - s.clock()
	if d <= 0 {
		return 0
	}
	return int((d + int64(time.Millisecond) - 1) / int64(time.Millisecond))
}

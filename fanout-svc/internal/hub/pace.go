package hub

import (
	"time"

	"github.com/likes/likes/fanout-svc/internal/posts"
)

// pacedMin is the fewest viewers of a post on a loop for which a busy display is paced (written
// to its viewers in turn, spread over the display gap) rather than held and written to all of
// them at once.
const pacedMin = 256

// pacedWake is how often a loop with a paced post in progress wakes to write the next share.
const pacedWake = int64(time.Millisecond)

// pacing is a big room's viewers taking turns: the loop visits the post's viewers one after the
// other, len(members) per display gap, and gives each the post's newest frame when it lacks it;
// it stops once every viewer has the newest one (remaining reaches 0) and resumes at the next
// frame where it stopped. A room is paced while it is busy: from a frame that comes within a gap
// of the last display until a gap passes without one. The first frame after a quiet spell goes
// to the whole room at once (collect), which a few hundred viewers take in a few milliseconds
// and which keeps a quiet room's latency at the write time, not half a gap.
//
// Held and written all at once, a frame to 10,000 viewers is 10,000 writes in a row: on this VM
// about 170 ms in which the loop serves nothing else, the last viewer that much behind the first,
// and a reaction just after a turn waits a gap plus that burst. Paced, each viewer gets the
// newest value at its own turn, once a gap: a reaction waits at most one gap for any viewer, and
// other posts' updates on the loop never queue behind the room's burst. The writes are the same,
// spread out.
type pacing struct {
	active    bool
	next      int   // the member whose turn is next
	remaining int   // turns until every member has had one since the newest frame came
	at        int64 // turns are due up to this time
}

// pace makes f, just collected, sp's newest frame and its viewers' turns run until each has had
// one since. A viewer that had not yet got the previous frame gets f instead: held back.
func (s *loop) pace(sp *loopPost, f *posts.Frame) {
	p := &sp.pace
	if p.active {
		s.counts.displayHeld += int64(p.remaining)
		s.counts.conflated += int64(p.remaining)
	} else {
		p.active = true
		p.at = s.now - s.turn(sp) // the first turn at once: the first update after a quiet spell is not held
		s.paced = append(s.paced, sp)
	}
	sp.current = f
	p.remaining = len(sp.members)
}

// turn is the time between two viewers' turns of sp: its display gap shared among its viewers.
func (s *loop) turn(sp *loopPost) int64 {
	return max(s.displayGap(sp)/int64(max(len(sp.members), 1)), 1)
}

// advancePacing gives each paced post's viewers the turns due by now.
func (s *loop) advancePacing() {
	keep := s.paced[:0]
	for _, sp := range s.paced {
		p := &sp.pace
		if sp.gone || len(sp.members) == 0 {
			p.active = false
			continue
		}
		turn := s.turn(sp)
		due := min(int((s.now-p.at)/turn), p.remaining)
		p.at += int64(due) * turn
		for ; due > 0; due-- {
			if p.next >= len(sp.members) {
				p.next = 0
			}
			s.give(sp, sp.members[p.next])
			p.next++
			p.remaining--
		}
		if p.remaining == 0 {
			p.active = false
			if f := sp.current; f != nil {
				s.counts.delivery.observe(wallMicros() - f.Update.TS)
			}
			continue
		}
		keep = append(keep, sp)
	}
	clear(s.paced[len(keep):])
	s.paced = keep
}

// give writes sp's newest frame to member m unless it has it; a viewer whose socket is full is owed
// it (flushViewer). Its owed watching frames ride along, as in flushBatches.
func (s *loop) give(sp *loopPost, m member) {
	defer s.recoverViewer(m.v)
	v, f := m.v, sp.current
	sl := &v.links[m.link]
	switch {
	case v.doomed || f == nil || f.Version <= sl.sent:
		return
	case v.blocked():
		s.owe(v, m.link)
		return
	}
	sl.sent = f.Version
	b := f.Bytes
	if v.watching != 0 {
		b = s.appendOwed(v, append(s.scratch[:0], b...), 1)
		s.scratch = b[:0]
	}
	s.write(v, b, 1)
}

package hub

import (
	"math/bits"

	"github.com/likes/likes/fanout-svc/internal/epoll"
)

// owe marks link i's newest frame as owed to v once its socket drains. A frame already owed is
// replaced, never queued: that replacement is a conflation.
func (s *loop) owe(v *viewer, i int) {
	bit := uint64(1) << uint(i)
	if v.dirty&bit != 0 {
		s.counts.conflated++
	}
	v.dirty |= bit
}

// write hands b (holding frames frames) to v's socket; what does not fit is copied to v.pending.
// Its callers recover a panic for v (recover.go): write is not, so that a frame costs one deferred
// recover per viewer, not two.
func (s *loop) write(v *viewer, b []byte, frames int64) {
	n, ok := s.writeSome(v, b)
	if !ok {
		return
	}
	s.counts.framesSent += frames
	if n < len(b) {
		v.pending = append(v.pending[:0], b[n:]...)
		if v.blockedSince == 0 {
			v.blockedSince = s.now
			s.fileDue(v) // checked each tick while full
		}
	}
}

// writeSome writes what v's socket takes of b. A write error dooms v and reports false.
func (s *loop) writeSome(v *viewer, b []byte) (int, bool) {
	n, err := epoll.Write(v.fd, b)
	s.counts.writes++
	if err != nil {
		s.counts.writeErrors++
		s.doom(v)
		return 0, false
	}
	s.counts.bytes += int64(n)
	v.lastWrite = s.now
	return n, true
}

// flushViewer runs when v's socket may take more: the rest of the last write first, then the
// newest frame of every post owed to v, with its owed watching frames, in one write. Watching
// frames owed without a count frame wait for the heartbeat.
func (s *loop) flushViewer(v *viewer) {
	if v.doomed {
		return
	}
	if len(v.pending) > 0 {
		n, ok := s.writeSome(v, v.pending)
		if !ok {
			return
		}
		if n < len(v.pending) {
			v.pending = v.pending[n:]
			return
		}
		v.pending = nil // an idle viewer keeps no buffer
		v.blockedSince = 0
	}
	if v.dirty == 0 {
		return
	}
	buf := s.scratch[:0]
	var frames int64
	for d := v.dirty; d != 0; d &= d - 1 {
		i := bits.TrailingZeros64(d)
		sl := &v.links[i]
		if f := sl.sp.current; f != nil && f.Version > sl.sent {
			buf = append(buf, f.Bytes...)
			sl.sent = f.Version
			frames++
		}
	}
	v.dirty = 0
	buf = s.appendOwed(v, buf, frames)
	s.scratch = buf[:0]
	if len(buf) > 0 {
		s.write(v, buf, frames)
	}
	if !v.blocked() {
		v.blockedSince = 0
	}
}

package hub

import (
	"math/bits"

	"github.com/likes/likes/fanout-svc/internal/posts"
)

// batch is the frames a loop collected since its last flush: the posts with frames owed to their
// viewers, and the multi-post viewers whose posts' batches are concatenated into one write.
type batch struct {
	posts   []*loopPost
	viewers []*viewer
	frames  []*posts.Frame // scratch for Post.Since
	flushAt int64          // with a flush window: when the open batch is written; 0: no batch open
}

// collect appends p's frames that this loop has not processed yet to the post's current batch
// (or holds them for the rate cap). Batches are written by flushBatches: at once, or when the
// flush window closes.
func (s *loop) collect(p *posts.Post) {
	sp := s.posts[p]
	if sp == nil {
		return
	}
	var seen uint64
	if sp.current != nil {
		seen = sp.current.Seq
	}
	newest := p.Latest()
	if newest == nil || newest.Seq <= seen {
		return
	}
	gap := s.displayGap(sp)
	if gap > 0 && len(sp.members) >= pacedMin && (sp.pace.active || s.now < sp.nextAllowed) {
		// A busy big room takes turns at the display rate (pace.go); the first update after a
		// quiet spell went to all of it at once, below.
		skipped := int64(newest.Seq-seen-1) * int64(len(sp.members))
		s.counts.conflated += skipped
		s.counts.displayHeld += skipped
		sp.nextAllowed = s.now + gap
		s.pace(sp, newest)
		return
	}
	if s.now < sp.nextAllowed {
		if !sp.held {
			sp.held = true
			s.held = append(s.held, sp)
		}
		return
	}
	if gap > 0 {
		sp.nextAllowed = s.now + gap
		// A capped post shows its newest value at the display rate, never its history.
		skipped := int64(newest.Seq-seen-1) * int64(len(sp.members))
		s.counts.conflated += skipped
		s.counts.displayHeld += skipped
		s.addToBatch(sp, newest)
		return
	}
	frames, skipped := p.Since(seen, s.batch.frames[:0])
	s.counts.conflated += int64(skipped) * int64(len(sp.members))
	for i, f := range frames {
		s.addToBatch(sp, f)
		frames[i] = nil
	}
	s.batch.frames = frames[:0]
}

// releaseHeld collects the rate-capped posts whose next turn has come.
func (s *loop) releaseHeld() {
	keep := s.held[:0]
	for _, sp := range s.held {
		if sp.gone {
			continue
		}
		if s.now < sp.nextAllowed {
			keep = append(keep, sp)
			continue
		}
		sp.held = false
		s.collect(sp.post)
	}
	clear(s.held[len(keep):])
	s.held = keep
}

// addToBatch appends f to the post's batch: the frames its viewers are owed at the next flush,
// concatenated once in both id forms and shared by every viewer. Past MaxBatchFrames the batch
// keeps only the newest frame: a viewer then gets the newest count, not the history.
func (s *loop) addToBatch(sp *loopPost, f *posts.Frame) {
	sp.current = f
	if !sp.inBatch {
		sp.inBatch = true
		sp.batch, sp.batchFrames = sp.batch[:0], 0
		sp.batchFirstTS, sp.batchFirst = f.Update.TS, f.Version
		s.batch.posts = append(s.batch.posts, sp)
		if s.cfg.FlushWindow > 0 && s.batch.flushAt == 0 {
			s.batch.flushAt = s.now + int64(s.cfg.FlushWindow)
		}
	}
	if sp.batchFrames >= s.cfg.MaxBatchFrames {
		s.counts.conflated += int64(sp.batchFrames * len(sp.members))
		sp.batch, sp.batchFrames = sp.batch[:0], 0
		sp.batchFirstTS, sp.batchFirst = f.Update.TS, f.Version
	}
	sp.batch = append(sp.batch, f.Bytes...)
	sp.batchFrames++
}

// flushBatches writes each viewer's owed frames: one write per single-post viewer (the post's
// shared batch bytes), one write per multi-post viewer (its posts' batches concatenated). The
// watching frames a viewer is owed go in the same write (appendOwed, watching.go).
func (s *loop) flushBatches() {
	for _, sp := range s.batch.posts {
		if sp.gone {
			continue
		}
		for _, m := range sp.members {
			v := m.v
			if v.doomed {
				continue
			}
			if v.multi {
				v.batchDirty |= 1 << uint(m.link)
				if !v.inBatchList {
					v.inBatchList = true
					s.batch.viewers = append(s.batch.viewers, v)
				}
				continue
			}
			s.sendBatch(v)
		}
	}
	for _, v := range s.batch.viewers {
		v.inBatchList = false
		if v.doomed {
			v.batchDirty = 0
			continue
		}
		s.sendBatches(v)
	}
	now := wallMicros()
	for i, sp := range s.batch.posts {
		if !sp.gone && sp.batchFrames > 0 {
			s.counts.delivery.observe(now - sp.batchFirstTS)
		}
		sp.inBatch = false
		s.batch.posts[i] = nil
	}
	clear(s.batch.viewers)
	s.batch.posts, s.batch.viewers, s.batch.flushAt = s.batch.posts[:0], s.batch.viewers[:0], 0
}

// sendBatch writes a single-post viewer its post's batch, or owes it the newest frame while its
// socket is full.
func (s *loop) sendBatch(v *viewer) {
	defer s.recoverViewer(v)
	if v.blocked() {
		s.owe(v, 0)
		return
	}
	if b, n := batchBytes(v, 0); len(b) > 0 {
		if v.watching != 0 { // owed watching frames ride along: the shared bytes are copied
			b = s.appendOwed(v, append(s.scratch[:0], b...), n)
			s.scratch = b[:0]
		}
		s.write(v, b, n)
	}
}

// sendBatches writes a multi-post viewer the batches of its posts that have one, in one write,
// or owes it their newest frames while its socket is full.
func (s *loop) sendBatches(v *viewer) {
	defer s.recoverViewer(v)
	if v.blocked() {
		s.counts.conflated += int64(bits.OnesCount64(v.batchDirty & v.dirty))
		v.dirty |= v.batchDirty
		v.batchDirty = 0
		return
	}
	buf := s.scratch[:0]
	var frames int64
	for d := v.batchDirty; d != 0; d &= d - 1 {
		b, n := batchBytes(v, bits.TrailingZeros64(d))
		buf = append(buf, b...)
		frames += n
	}
	v.batchDirty = 0
	buf = s.appendOwed(v, buf, frames)
	s.scratch = buf[:0]
	if len(buf) > 0 {
		s.write(v, buf, frames)
	}
}

// batchBytes returns what link i of v is owed from its post's batch: every frame of the batch
// (shared bytes), or only the newest if v already had part of it (it joined mid-batch). It
// records the newest as sent.
func batchBytes(v *viewer, i int) ([]byte, int64) {
	sl := &v.links[i]
	sp := sl.sp
	cur := sp.current
	if cur == nil || cur.Version <= sl.sent {
		return nil, 0
	}
	prev := sl.sent
	sl.sent = cur.Version
	if prev >= sp.batchFirst || sp.batchFrames == 0 {
		return cur.Bytes, 1
	}
	return sp.batch, int64(sp.batchFrames)
}

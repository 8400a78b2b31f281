package hub

import (
	"math/bits"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// Watching numbers ("N watching now") reach viewers through shared frames and newest-value pointers
// like counts, but they never cost a write of their own: at 100K viewers a number that changes
// every interval would otherwise be 50K writes per second for a figure nobody reads to the last
// digit. So:
//
//   - PublishWatching rounds the number first (displayWatching: exact below 1,000, three
//     significant digits above) and drops it when the shown number stays the same. Each shown
//     number is encoded once, with no id (it must never move a stream's Last-Event-ID), and it is
//     not ordered with the post's counts.
//   - A changed number only marks each viewer of the post as owed it (one bit per post; a newer
//     number replaces an owed one). The owed frames go out appended to the viewer's next write:
//     the next count frames it is sent (flushBatches, flushViewer), or, if none come, the
//     heartbeat, which carries them instead of ": ping" (sweep). A viewer whose socket is full
//     keeps its bits; once it drains, the newest numbers go with its owed counts or heartbeat.
//
// What a client sees: the numbers in its first write are the current ones; a later change
// arrives with the next count frame of the stream, or at the latest with the next heartbeat
// (HEARTBEAT_INTERVAL, 15 s by default); numbers from 1,000 on are rounded to three significant
// digits, with some hysteresis (within 0.75% of the cluster-wide total; displayWatching). Since
// the hysteresis depends on what a node showed before, two nodes may show a large post's number
// one step apart.

// watchBatch is the posts with a new watching frame since the loop took its inbox.
type watchBatch struct {
	posts []*loopPost
}

// PublishWatching hands the hub a post's watching number. It never blocks: it records the number
// viewers are to be shown (displayWatching) as the post's newest watching frame and marks the
// post in every loop. A number older than the one the hub has, or one that shows the same, is
// dropped, so viewers hear of visible changes only.
func (h *Hub) PublishWatching(w update.Watching) {
	p := h.posts.Lookup(w.PostID)
	if p == nil {
		return
	}
	for {
		old := p.Watching()
		shown := int64(-1)
		if old != nil {
			if old.TS >= w.TS {
				return
			}
			shown = old.N
		}
		d := displayWatching(shown, w.Watching)
		if d == shown {
			return
		}
		nw := w
		nw.Watching = d
		if p.SwapWatching(old, posts.NewWatchFrame(nw)) {
			break
		}
	}
	h.stats.WatchingUpdates.Add(1)
	for _, s := range h.loops {
		s.markWatching(p)
	}
}

// markWatching tells the loop that p has a new watching frame. Called from any goroutine.
func (s *loop) markWatching(p *posts.Post) {
	s.inbox.mu.Lock()
	s.inbox.watching[p] = struct{}{}
	s.inbox.mu.Unlock()
	s.wake()
}

// collectWatching takes p's newest watching frame into the loop and lists the post for
// flushWatching, unless the loop has it already (a viewer registered since took it).
func (s *loop) collectWatching(p *posts.Post) {
	sp := s.posts[p]
	if sp == nil {
		return
	}
	wf := p.Watching()
	if wf == nil || wf == sp.watching {
		return
	}
	sp.watching = wf
	s.watch.posts = append(s.watch.posts, sp)
}

// flushWatching marks the collected watching frames as owed to every viewer of their posts; it
// writes nothing. The frames ride along with each viewer's next write (appendOwedWatching): its
// next count frames or its heartbeat. A newer number replaces an owed one; that counts as a
// conflation only for a viewer whose socket is full, as for counts, because for the others it is
// the design, not a slow reader.
func (s *loop) flushWatching() {
	for i, sp := range s.watch.posts {
		s.watch.posts[i] = nil
		if sp.gone {
			continue
		}
		for _, m := range sp.members {
			v := m.v
			bit := uint64(1) << uint(m.link)
			if v.watching&bit != 0 && v.blocked() {
				s.counts.conflated++
			}
			v.watching |= bit
		}
	}
	s.watch.posts = s.watch.posts[:0]
}

// appendOwedWatching appends the newest watching frame of every post owed to v and clears the
// bits; it reports how many frames it appended.
func (s *loop) appendOwedWatching(v *viewer, buf []byte) ([]byte, int64) {
	var n int64
	for d := v.watching; d != 0; d &= d - 1 {
		if wf := v.links[bits.TrailingZeros64(d)].sp.watching; wf != nil {
			buf = append(buf, wf.Bytes...)
			n++
		}
	}
	v.watching = 0
	return buf, n
}

// appendOwed appends to buf, which holds frames count frames for v, the watching frames owed to
// v, so that they go out in the same write. Without count frames it appends nothing: a watching
// number alone waits for the heartbeat (sweep).
func (s *loop) appendOwed(v *viewer, buf []byte, frames int64) []byte {
	if frames == 0 || v.watching == 0 {
		return buf
	}
	buf, n := s.appendOwedWatching(v, buf)
	s.counts.watchingSent += n
	return buf
}

// heartbeat writes to an idle v its owed watching frames, or ": ping" when it is owed none:
// either keeps the connection's proxies and the client's watchdog from timing out.
func (s *loop) heartbeat(v *viewer) {
	if v.watching != 0 {
		buf, n := s.appendOwedWatching(v, s.scratch[:0])
		s.scratch = buf[:0]
		if len(buf) > 0 {
			s.counts.watchingSent += n
			s.write(v, buf, 0)
			return
		}
	}
	s.counts.heartbeats++
	s.write(v, sse.Ping, 0)
}

// appendWatchingState appends, for a viewer being registered, the watching number the loop has
// for each of its posts, so that a new viewer sees them at once rather than at the next change.
func (s *loop) appendWatchingState(v *viewer, buf []byte) []byte {
	for i := range v.links {
		if wf := v.links[i].sp.watching; wf != nil {
			buf = append(buf, wf.Bytes...)
			s.counts.watchingSent++
		}
	}
	return buf
}

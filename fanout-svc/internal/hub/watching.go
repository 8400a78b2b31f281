package hub

import (
	"math/bits"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// Watching numbers ("N watching now") reach viewers the way counts do, through shared frames and
// latest-value slots, but on their own path: a watching frame carries no id (it must never move a
// stream's Last-Event-ID), is not ordered with the post's counts, and replaces the previous one
// outright. Per post and interval it is encoded once by PublishWatching; each shard writes it to
// its viewers of the post, in one write per viewer for all the posts of a multi-post stream; a
// viewer whose socket is full keeps one bit per post and gets the newest number when it drains.

// watchFrame is one watching number of a post, encoded once for every viewer.
type watchFrame struct {
	n, ts int64
	bytes []byte
}

// watchBatch is the viewers owed watching frames since the shard took its inbox.
type watchBatch struct {
	posts   []*shardPost
	viewers []*viewer
}

// LocalViewers calls fn once for each post with local viewers, with their number: a viewer of a
// multi-post stream counts once for each of its posts. It runs under the hub's read lock, in
// time proportional to the posts, not the viewers; fn must not block.
func (h *Hub) LocalViewers(fn func(post string, viewers int)) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for id, p := range h.posts {
		if p.refs > 0 && p.err == nil {
			fn(id, p.refs)
		}
	}
}

// PublishWatching hands the hub a post's watching number. It never blocks: it records the
// number as the post's newest watching frame and marks the post in every shard. A number equal
// to the one the hub has, or older, is dropped, so viewers hear of changes only.
func (h *Hub) PublishWatching(w update.Watching) {
	h.mu.RLock()
	p := h.posts[w.PostID]
	h.mu.RUnlock()
	if p == nil {
		return
	}
	var nf *watchFrame
	for {
		old := p.watching.Load()
		if old != nil && (old.n == w.Watching || old.ts >= w.TS) {
			return
		}
		if nf == nil {
			nf = newWatchFrame(w)
		}
		if p.watching.CompareAndSwap(old, nf) {
			break
		}
	}
	h.stats.WatchingUpdates.Add(1)
	for _, s := range h.shards {
		s.markWatching(p)
	}
}

func newWatchFrame(w update.Watching) *watchFrame {
	var data [96]byte
	b := sse.AppendWatching(make([]byte, 0, 112), w.AppendJSON(data[:0]))
	return &watchFrame{n: w.Watching, ts: w.TS, bytes: b[:len(b):len(b)]}
}

// markWatching tells the shard that p has a new watching frame. Called from any goroutine.
func (s *shard) markWatching(p *Post) {
	s.inbox.mu.Lock()
	s.inbox.watching[p] = struct{}{}
	s.inbox.mu.Unlock()
	s.wake()
}

// collectWatching takes p's newest watching frame into the shard and lists the post for
// flushWatching, unless the shard has it already (a viewer registered since took it).
func (s *shard) collectWatching(p *Post) {
	sp := s.posts[p]
	if sp == nil {
		return
	}
	wf := p.watching.Load()
	if wf == nil || wf == sp.watching {
		return
	}
	sp.watching = wf
	s.watch.posts = append(s.watch.posts, sp)
}

// flushWatching writes the collected watching frames: one write per viewer with all its posts'
// frames. A viewer whose socket is full keeps the posts as owed bits instead (newest wins).
func (s *shard) flushWatching() {
	for i, sp := range s.watch.posts {
		s.watch.posts[i] = nil
		if sp.gone {
			continue
		}
		for _, m := range sp.members {
			v := m.v
			if v.doomed {
				continue
			}
			if v.watching&(1<<uint(m.slot)) != 0 {
				s.counts.conflated++ // owed and not yet written: replaced by the newer number
			}
			v.watching |= 1 << uint(m.slot)
			if !v.inWatchList {
				v.inWatchList = true
				s.watch.viewers = append(s.watch.viewers, v)
			}
		}
	}
	s.watch.posts = s.watch.posts[:0]
	for i, v := range s.watch.viewers {
		s.watch.viewers[i] = nil
		v.inWatchList = false
		if v.doomed || v.blocked() {
			continue // a blocked viewer keeps its bits until its socket drains (flushViewer)
		}
		buf, n := s.appendOwedWatching(v, s.scratch[:0])
		s.scratch = buf[:0]
		s.writeWatching(v, buf, n)
	}
	s.watch.viewers = s.watch.viewers[:0]
}

// appendOwedWatching appends the newest watching frame of every post owed to v and clears the
// bits; it reports how many frames it appended.
func (s *shard) appendOwedWatching(v *viewer, buf []byte) ([]byte, int64) {
	var n int64
	for d := v.watching; d != 0; d &= d - 1 {
		if wf := v.slots[bits.TrailingZeros64(d)].sp.watching; wf != nil {
			buf = append(buf, wf.bytes...)
			n++
		}
	}
	v.watching = 0
	return buf, n
}

// writeWatching writes n watching frames in b to v; they are counted apart from count events.
func (s *shard) writeWatching(v *viewer, b []byte, n int64) {
	if len(b) == 0 {
		return
	}
	s.counts.watchingSent += n
	s.write(v, b, 0)
}

// appendWatchingState appends, for a viewer being registered, the watching number the shard has
// for each of its posts, so that a new viewer sees them at once rather than at the next change.
func (s *shard) appendWatchingState(v *viewer, buf []byte) []byte {
	for i := range v.slots {
		if wf := v.slots[i].sp.watching; wf != nil {
			buf = append(buf, wf.bytes...)
			s.counts.watchingSent++
		}
	}
	return buf
}

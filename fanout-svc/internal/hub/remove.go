package hub

import "github.com/likes/likes/fanout-svc/internal/posts"

// doom marks v for removal by the next reap.
func (s *loop) doom(v *viewer) {
	if !v.doomed {
		v.doomed = true
		s.doomed = append(s.doomed, v)
	}
}

// reap removes doomed viewers. It runs between phases, never while a post's viewer list is being
// walked, because removal reorders that list.
func (s *loop) reap() {
	for i, v := range s.doomed {
		s.removeViewer(v)
		s.doomed[i] = nil
	}
	s.doomed = s.doomed[:0]
}

// removeViewer takes v out of the loop, then lets go of what it holds outside it (its connection,
// its posts, its OnClose), each on its own: a panic in one (recover.go) leaves the others done.
func (s *loop) removeViewer(v *viewer) {
	defer s.recoverRemoval()
	if s.viewers[v.fd] == v {
		delete(s.viewers, v.fd)
		s.size.Add(-1)
		if _, own := v.conn.(Accepted); !own {
			s.poller.Remove(v.fd) // a connection of Go's: its descriptor may outlive our close
		} // else closing the descriptor, below, takes it out of the poller: one system call less
	}
	s.closeConn(v)
	s.due.drop(v)
	held := make([]*posts.Post, len(v.links))
	for i, sl := range v.links {
		sp := sl.sp
		held[i] = sp.post
		last := len(sp.members) - 1
		moved := sp.members[last]
		sp.members[sl.idx] = moved
		moved.v.links[moved.link].idx = sl.idx
		sp.members[last] = member{}
		sp.members = sp.members[:last]
		if len(sp.members) == 0 {
			sp.gone = true
			delete(s.posts, sp.post)
		}
	}
	v.pending = nil
	s.counts.disconnects++
	s.hub.stats.Viewers.Add(-1)
	s.hub.admitted.Add(-1)
	s.releasePosts(held)
	s.runOnClose(v)
}

// closeConn, releasePosts and runOnClose are removeViewer's calls out of the loop, each recovered
// on its own, so that a panic in one still lets the others run.
func (s *loop) closeConn(v *viewer) {
	defer s.recoverRemoval()
	_ = v.conn.Close()
}

func (s *loop) releasePosts(held []*posts.Post) {
	defer s.recoverRemoval()
	s.hub.posts.Release(held)
}

func (s *loop) runOnClose(v *viewer) {
	defer s.recoverRemoval()
	if v.onClose != nil {
		v.onClose()
	}
}

// shutdown closes every viewer and the poller when the loop stops.
func (s *loop) shutdown() {
	if s.intake != nil {
		s.intake.Detach()
		s.intake = nil
	}
	for _, v := range s.viewers {
		s.doom(v)
	}
	s.reap()
	for _, nv := range s.takeAdds() {
		s.size.Add(-1)
		s.hub.reject(nv)
	}
	s.counts.flushTo(&s.hub.stats)
	s.poller.Close()
}

package hub

import (
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/fanout-svc/internal/posts"
)

// register adopts a new viewer: links it to its posts, writes the preamble and the current state
// of each post (the newer of the snapshot and the hub's frame), and starts watching its socket.
func (s *loop) register(nv *Viewer) {
	fd, err := epoll.SocketFD(nv.Conn)
	if err != nil {
		s.hub.log.Warn("adopt connection", zap.Error(err))
		s.size.Add(-1)
		s.hub.reject(nv)
		return
	}
	if s.cfg.SendBuffer > 0 {
		_ = epoll.SetSendBuffer(fd, s.cfg.SendBuffer)
	}
	v := &viewer{fd: fd, conn: nv.Conn, multi: nv.Multi, links: make([]link, len(nv.Posts)), lastWrite: s.now, onClose: nv.OnClose}
	buf := s.scratch[:0] // the loop's scratch buffer, reused for every write it builds
	buf = append(buf, nv.Preamble...)
	var frames int64
	for i, p := range nv.Posts {
		sp := s.posts[p]
		if sp == nil {
			sp = &loopPost{post: p, current: p.Latest(), watching: p.Watching()}
			s.posts[p] = sp
		}
		v.links[i] = link{sp: sp, idx: len(sp.members)}
		sp.members = append(sp.members, member{v: v, link: i})
		state := nv.Snapshot[i]
		lf := p.Latest()
		if lf != nil && !state.Newer(lf.Update) {
			state = lf.Update
		} else {
			lf = nil
		}
		v.links[i].sent = state.Version()
		if nv.Resume != nil && !nv.Resume(i, state) {
			continue
		}
		if lf != nil {
			buf = append(buf, lf.Bytes...)
		} else {
			buf = posts.AppendFrame(buf, state) // a snapshot read from Redis: encoded for this viewer alone
		}
		frames++
	}
	buf = s.appendWatchingState(v, buf)
	s.scratch = buf[:0]
	s.viewers[fd] = v
	s.hub.stats.Viewers.Add(1) // connected from here on; removeViewer uncounts it
	if err := s.poller.Add(fd); err != nil {
		s.hub.log.Warn("epoll add", zap.Error(err))
		s.doom(v)
		return
	}
	s.firstWrite(v, buf, frames)
	s.fileDue(v)
}

// firstWrite is a new viewer's first write, recovered for v as the loop's other work for one
// viewer is (recover.go).
func (s *loop) firstWrite(v *viewer, b []byte, frames int64) {
	defer s.recoverViewer(v)
	s.write(v, b, frames)
}

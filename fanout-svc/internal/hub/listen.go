package hub

import (
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/fastaccept"
)

// Listen makes every shard accept connections from l itself (fastaccept.Intake): a viewer's
// connect is accepted, its head read and handed to l's handler on the loop that will write to the
// viewer, with no goroutine and no hand-over between accept and the first frame, as an nginx
// worker serves its connections (issue 21 §2). The handler's Add keeps the viewer on that shard
// (homeFor). Closing l detaches the shards again.
func (h *Hub) Listen(l *fastaccept.Listener) {
	for _, s := range h.shards {
		s.inbox.mu.Lock()
		s.inbox.listen = l
		s.inbox.mu.Unlock()
		s.wake()
	}
}

// attach starts the shard's accepting from l; the loop calls it with the inbox's request.
func (s *shard) attach(l *fastaccept.Listener) {
	if s.intake != nil {
		return
	}
	in, err := l.Attach(s.poller, s.wake, s)
	if err != nil {
		s.hub.log.Debug("attach listener", zap.Error(err)) // closed before the shard got to it
		return
	}
	s.intake = in
}

// detachIfClosing lets go of a closing listener; the loop calls it on every wake.
func (s *shard) detachIfClosing() {
	if s.intake != nil && s.intake.Closing() {
		s.intake.Detach()
		s.intake = nil
	}
}

// homeFor is the shard a new viewer goes to: the one that accepted its connection while it holds
// no more than its share of the hub's viewers (plus one), else the shard holding the fewest. The
// shards must stay even, not only for their cores' sake: each shard paces a big room's display
// as if the node's viewers of the post were its own times the shards (display.go), and a
// connection wakes whichever shard is idle, which under a light load is mostly the same one.
func (h *Hub) homeFor(v *Viewer) *shard {
	if len(h.shards) == 1 {
		return h.shards[0]
	}
	var total, fewest int64
	var least *shard
	for _, s := range h.shards {
		n := s.size.Load()
		total += n
		if least == nil || n < fewest {
			least, fewest = s, n
		}
	}
	if c, ok := v.Conn.(*fastaccept.Conn); ok {
		if s, ok := c.Home().(*shard); ok && s.hub == h && s.size.Load()*int64(len(h.shards)) <= total+int64(len(h.shards)) {
			return s
		}
		return least
	}
	return h.shards[int(h.next.Add(1))%len(h.shards)] // a connection of net/http's: in turn, as before
}

// onItsLoop reports whether Add runs on s's own loop, in the handler of a connection s accepted:
// s then registers the viewer there and then, without its inbox (a lock, an eventfd write and
// read).
func (s *shard) onItsLoop(v *Viewer) bool {
	c, ok := v.Conn.(*fastaccept.Conn)
	return ok && c.OnLoop() && c.Home() == s
}

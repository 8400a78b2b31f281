package hub

import (
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/epoll"
)

// Acceptor is a listening socket whose connections the loops accept themselves, on their own
// pollers (the node's fast accept path): a viewer's connect is accepted, its head read and served
// on the loop that will write to the viewer, with no goroutine and no hand-over between accept and
// the first frame, as an nginx worker serves its connections.
type Acceptor interface {
	// Attach adds a loop: its poller watches the listening socket from now on, wake wakes the
	// loop, and home is what the connections it accepts report as their Home (Accepted).
	Attach(poller *epoll.Poller, wake func(), home any) (Intake, error)
}

// Intake is one loop's share of an Acceptor. The loop hands it the events of descriptors that are
// not its viewers', calls Tick at least every TickEvery while it is Waiting, and Detach once it
// is Closing or the loop stops.
type Intake interface {
	Event(fd int) bool
	Waiting() bool
	Tick()
	TickEvery() time.Duration
	Closing() bool
	Detach()
}

// Accepted is a connection a loop accepted itself. Its descriptor is the loop's alone: closing it
// takes it out of the poller.
type Accepted interface {
	net.Conn
	// Home is the home given to Attach by the loop that accepted the connection.
	Home() any
	// OnLoop reports whether the caller runs on that loop, serving the connection's head.
	OnLoop() bool
}

// Listen makes every loop accept connections from a itself. Add keeps a viewer whose connection
// a loop accepted on that loop (homeFor). Once a is closing, the loops detach again.
func (h *Hub) Listen(a Acceptor) {
	for _, s := range h.loops {
		s.inbox.mu.Lock()
		s.inbox.listen = a
		s.inbox.mu.Unlock()
		s.wake()
	}
}

// attach starts the loop's accepting from a; the loop calls it with the inbox's request.
func (s *loop) attach(a Acceptor) {
	if s.intake != nil {
		return
	}
	in, err := a.Attach(s.poller, s.wake, s)
	if err != nil {
		s.hub.log.Debug("attach listener", zap.Error(err)) // closed before the loop got to it
		return
	}
	s.intake = in
}

// detachIfClosing lets go of a closing listener; the loop calls it on every wake.
func (s *loop) detachIfClosing() {
	if s.intake != nil && s.intake.Closing() {
		s.intake.Detach()
		s.intake = nil
	}
}

// homeFor is the loop a new viewer goes to: the one that accepted its connection while it holds
// no more than its share of the hub's viewers (plus one), else the loop holding the fewest. The
// loops must stay even, not only for their cores' sake: each loop paces a big room's display
// as if the node's viewers of the post were its own times the loops (display.go), and a
// connection wakes whichever loop is idle, which under a light load is mostly the same one.
func (h *Hub) homeFor(v *Viewer) *loop {
	if len(h.loops) == 1 {
		return h.loops[0]
	}
	var total, fewest int64
	var least *loop
	for _, s := range h.loops {
		n := s.size.Load()
		total += n
		if least == nil || n < fewest {
			least, fewest = s, n
		}
	}
	if c, ok := v.Conn.(Accepted); ok {
		if s, ok := c.Home().(*loop); ok && s.hub == h && s.size.Load()*int64(len(h.loops)) <= total+int64(len(h.loops)) {
			return s
		}
		return least
	}
	return h.loops[int(h.next.Add(1))%len(h.loops)] // a connection of net/http's: in turn, as before
}

// onItsLoop reports whether Add runs on s's own loop, in the handler of a connection s accepted:
// s then registers the viewer there and then, without its inbox (a lock, an eventfd write and
// read).
func (s *loop) onItsLoop(v *Viewer) bool {
	c, ok := v.Conn.(Accepted)
	return ok && c.OnLoop() && c.Home() == s
}

package hub

import (
	"sync/atomic"
	"time"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/fanout-svc/internal/posts"
)

// loop is one event loop: one goroutine around one epoll instance, owning a share of the viewers.
// Other goroutines talk to it only through its inbox (inbox.go); everything else is touched by
// the loop alone, so it has no lock. The loop's phases live in their own files: the inbox, the
// batches of frames (batch.go), the write path (write.go), registration (register.go), timers
// (timers.go) and removal (remove.go).
type loop struct {
	id     int
	hub    *Hub
	cfg    Config
	poller *epoll.Poller
	epoch  time.Time
	inbox  inbox

	// Owned by the loop.
	now      int64
	posts    map[*posts.Post]*loopPost
	viewers  map[int]*viewer
	doomed   []*viewer
	scratch  []byte
	readBuf  []byte
	batch    batch
	watch    watchBatch  // watching frames to write (watching.go)
	held     []*loopPost // rate-capped posts with a frame waiting for their next turn
	paced    []*loopPost // posts with a displayed frame being paced to their viewers (pace.go)
	nextTick int64
	tick     int64
	due      dueList // the viewers by when the sweep must visit them (timers.go)
	drain    drain
	shed     shedder // Hub.Shed: closes the viewers of the moment, keeps the loop running (shed.go)
	counts   counts
	intake   Intake // the connections this loop accepts itself (accept.go); nil: none

	size atomic.Int64 // viewers given to this loop and not yet removed, for Add's choice (accept.go)
}

func newLoop(id int, h *Hub) (*loop, error) {
	p, err := epoll.New()
	if err != nil {
		return nil, err
	}
	tick := h.cfg.Heartbeat / 4
	tick = max(10*time.Millisecond, min(tick, time.Second))
	return &loop{
		id: id, hub: h, cfg: h.cfg, poller: p, epoch: time.Now(),
		inbox: newInbox(),
		posts: make(map[*posts.Post]*loopPost), viewers: make(map[int]*viewer),
		scratch: make([]byte, 0, 4096), readBuf: make([]byte, 512),
		tick: int64(tick), due: newDueList(int64(tick), 0), // the loop's clock starts at 0 (epoch)
	}, nil
}

func (s *loop) clock() int64 { return int64(time.Since(s.epoch)) }

// run is the event loop. It returns after stop, having closed every viewer and the poller.
func (s *loop) run() {
	defer s.shutdown()
	s.now = s.clock()
	s.nextTick = s.now + s.tick
	for {
		events := s.poller.Wait(s.timeoutMs())
		s.now = s.clock()
		woken := false
		for i := range events {
			ev := &events[i]
			if s.poller.IsWake(ev) {
				woken = true
				continue
			}
			if v := s.viewers[int(ev.Fd)]; v != nil {
				s.onSocketEvent(v, ev.Events)
			} else if s.intake != nil {
				s.intake.Event(int(ev.Fd))
			}
		}
		s.reap()
		if woken && !s.processInbox() {
			return
		}
		s.runTimers()
		s.reap()
		s.counts.flushTo(&s.hub.stats)
	}
}

func (s *loop) onSocketEvent(v *viewer, events uint32) {
	defer s.recoverViewer(v)
	if events&epoll.Failed != 0 {
		s.doom(v)
		return
	}
	if events&epoll.In != 0 && epoll.ReadDiscard(v.fd, s.readBuf) {
		s.doom(v)
		return
	}
	if events&epoll.Out != 0 && (v.blocked() || v.dirty != 0) {
		s.flushViewer(v)
	}
}

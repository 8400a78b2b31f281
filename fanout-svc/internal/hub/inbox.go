package hub

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/fanout-svc/internal/posts"
)

// inbox is how other goroutines reach a loop: Publish marks posts dirty, Add hands over viewers,
// Drain and Close set flags. It is a set, not a queue: a post marked dirty twice before the loop
// looks is processed once, with its newest frame. woken spares one eventfd write per Publish
// while the loop has not yet taken the inbox.
type inbox struct {
	mu         sync.Mutex
	dirty      map[*posts.Post]struct{}
	adds       []*Viewer
	stopping   bool
	drainReq   time.Duration
	woken      atomic.Bool
	spareDirt  map[*posts.Post]struct{}
	spareAdds  []*Viewer
	watching   map[*posts.Post]struct{} // posts with a new watching frame (watching.go)
	spareWatch map[*posts.Post]struct{}
	listen     Acceptor // a listener to accept from (accept.go)
}

func newInbox() inbox {
	return inbox{dirty: make(map[*posts.Post]struct{}), spareDirt: make(map[*posts.Post]struct{}),
		watching: make(map[*posts.Post]struct{}), spareWatch: make(map[*posts.Post]struct{})}
}

// markDirty tells the loop that p has a newer frame. Called by Publish from any goroutine.
func (s *loop) markDirty(p *posts.Post) {
	s.inbox.mu.Lock()
	s.inbox.dirty[p] = struct{}{}
	s.inbox.mu.Unlock()
	s.wake()
}

func (s *loop) add(v *Viewer) {
	s.inbox.mu.Lock()
	s.inbox.adds = append(s.inbox.adds, v)
	s.inbox.mu.Unlock()
	s.wake()
}

func (s *loop) startDrain(window time.Duration) {
	s.inbox.mu.Lock()
	s.inbox.drainReq = max(window, time.Millisecond)
	s.inbox.mu.Unlock()
	s.wake()
}

func (s *loop) stop() {
	s.inbox.mu.Lock()
	s.inbox.stopping = true
	s.inbox.mu.Unlock()
	s.wake()
}

func (s *loop) wake() {
	if s.inbox.woken.CompareAndSwap(false, true) {
		s.poller.Wake()
	}
}

// processInbox applies what other goroutines asked for. It reports false when the loop must stop.
func (s *loop) processInbox() bool {
	in := &s.inbox
	s.poller.DrainWake()
	in.woken.Store(false) // before taking the inbox: a later Publish wakes us again
	in.mu.Lock()
	dirty, adds, stopping, window := in.dirty, in.adds, in.stopping, in.drainReq
	in.dirty, in.adds, in.drainReq = in.spareDirt, in.spareAdds[:0], 0
	watching := in.watching
	in.watching = in.spareWatch
	listen := in.listen
	in.listen = nil
	in.mu.Unlock()
	if stopping {
		return false
	}
	if listen != nil {
		s.attach(listen)
	}
	s.detachIfClosing()
	for p := range dirty {
		s.collect(p)
	}
	clear(dirty)
	in.spareDirt = dirty
	for p := range watching {
		s.collectWatching(p)
	}
	clear(watching)
	in.spareWatch = watching
	s.flushWatching()
	for i, v := range adds {
		s.register(v)
		adds[i] = nil
	}
	in.spareAdds = adds
	if window > 0 && !s.drain.active {
		s.drain = drain{active: true, start: s.now, end: s.now + int64(window), total: len(s.viewers)}
	}
	return true
}

// takeAdds empties the inbox's pending viewers; the loop calls it when it stops.
func (s *loop) takeAdds() []*Viewer {
	s.inbox.mu.Lock()
	defer s.inbox.mu.Unlock()
	adds := s.inbox.adds
	s.inbox.adds = nil
	return adds
}

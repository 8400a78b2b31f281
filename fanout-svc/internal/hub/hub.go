package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/update"
)

// Config tunes the engine.
type Config struct {
	Loops          int           // 0: GOMAXPROCS
	FlushWindow    time.Duration // 0: write each update at once; >0: batch a viewer's frames per window
	MaxBatchFrames int           // frames of one post per batch before conflating to the newest; 0: 32
	PostRate       float64       // max updates per second per post to viewers; 0: the display budget decides
	DisplayBudget  float64       // frames a second one post may cost this node, all its viewers together; 0: every update (display.go)
	DisplayMinRate float64       // updates a second the display budget shows a post at least
	Heartbeat      time.Duration // a viewer that heard nothing for this long gets its owed watching numbers, else ": ping"
	StallTimeout   time.Duration // a viewer whose socket has not drained for this long is dropped; 0: never
	// SendBuffer caps each viewer socket's kernel send buffer (SO_SNDBUF); 0: the kernel's
	// autotuning, which lets a never-reading client pin megabytes of kernel memory until the stall
	// timeout. A count stream needs a few frames of buffer, not megabytes.
	SendBuffer int
}

func (c *Config) defaults() {
	if c.Loops <= 0 {
		c.Loops = runtime.GOMAXPROCS(0)
	}
	if c.MaxBatchFrames <= 0 {
		c.MaxBatchFrames = 32
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
}

var (
	errClosed       = errors.New("hub closed")
	errTooManyPosts = fmt.Errorf("more than %d posts for one viewer", MaxPosts)
)

// Hub owns the loops that hold the viewers. The posts they show, and their subscriptions, are the
// registry's (package posts): the hub reads a post's frames and gives back its references.
type Hub struct {
	cfg      Config
	posts    *posts.Registry
	log      *zap.Logger
	loops    []*loop
	next     atomic.Uint32
	stats    Stats
	admitted atomic.Int64 // viewers admitted by Reserve and not gone yet: in setup or connected

	// mu guards closed: Add and the shed requests hold it for reading while they hand something
	// to a loop, so that Close cannot stop the loop between their check and the hand-over.
	mu     sync.RWMutex
	closed bool

	wg sync.WaitGroup
}

// New starts a hub with cfg.Loops loop goroutines, showing the posts of reg; Close stops them.
func New(cfg Config, reg *posts.Registry, log *zap.Logger) (*Hub, error) {
	cfg.defaults()
	h := &Hub{cfg: cfg, posts: reg, log: log}
	for i := 0; i < cfg.Loops; i++ {
		s, err := newLoop(i, h)
		if err != nil {
			for _, prev := range h.loops {
				prev.poller.Close()
			}
			return nil, fmt.Errorf("loop %d: %w", i, err)
		}
		h.loops = append(h.loops, s)
	}
	for _, s := range h.loops {
		h.wg.Add(1)
		go func() { // exits when Close stops the loop
			defer h.wg.Done()
			s.run()
		}()
	}
	return h, nil
}

// Publish hands an update to the hub. It never blocks on viewers: it records the post's newest
// frame and marks the post dirty in every loop. An update older than what the hub has is dropped,
// and so is one for a post whose subscription is not live (still subscribing, or leaving): it came
// from another subscription of the channel.
func (h *Hub) Publish(u update.Update) {
	p := h.posts.Receiving(u.PostID)
	if p == nil {
		return
	}
	// Offer checks again under the post's lock; this check only spares encoding a frame for a
	// message that is already stale.
	if old := p.Latest(); old != nil && !u.Newer(old.Update) {
		h.stats.Stale.Add(1)
		return
	}
	if !p.Offer(posts.NewFrame(u)) {
		h.stats.Stale.Add(1)
		return
	}
	h.stats.Updates.Add(1)
	for _, s := range h.loops {
		s.markDirty(p)
	}
}

// Prime gives the hub a post's state read from Redis after the post's subscription became live
// (a new viewer's snapshot). From then on the post is Known: the node has seen every change
// since, and later viewers start from its newest frame without a read of their own.
func (h *Hub) Prime(u update.Update) {
	p := h.posts.Receiving(u.PostID)
	if p == nil {
		return
	}
	h.Publish(u)
	p.SetKnown()
}

// Viewer describes a new viewer for Add.
type Viewer struct {
	Conn     net.Conn                          // hijacked connection, owned by the hub from Add on
	Posts    []*posts.Post                     // acquired posts, at most MaxPosts; their references pass to the hub
	Snapshot []update.Update                   // the state of each post read after subscribing
	Multi    bool                              // multi-post stream (ids are versions, not counts)
	Preamble []byte                            // response headers and retry hint, written first
	Resume   func(i int, f update.Update) bool // reports whether post i's state is news to a resuming viewer; nil: all is news
	OnClose  func()                            // called once the viewer is gone, also when Add refuses it; may be nil
}

// Reserve admits a viewer that is about to be set up and added, unless max (>0) viewers are
// admitted already. Each successful Reserve is matched by Unreserve if the viewer never reaches
// Add; from Add on the hub returns the admission when the viewer goes. Admission is not the
// viewers gauge: Stats.Viewers counts only viewers a loop holds.
func (h *Hub) Reserve(max int) bool {
	if n := h.admitted.Add(1); max > 0 && n > int64(max) {
		h.admitted.Add(-1)
		return false
	}
	return true
}

// Admitted returns how many viewers hold an admission: connected or in setup.
func (h *Hub) Admitted() int64 { return h.admitted.Load() }

// Unreserve returns an admission for a viewer that was never added.
func (h *Hub) Unreserve() { h.admitted.Add(-1) }

// Add hands a hijacked connection to a loop, which writes the preamble and each post's current
// state, then live updates. The hub owns the connection, the post references and the admission
// from here on, also when Add refuses the viewer (more than MaxPosts posts, or the hub closed).
func (h *Hub) Add(v Viewer) error {
	if len(v.Posts) > MaxPosts || len(v.Snapshot) != len(v.Posts) {
		h.reject(&v)
		return errTooManyPosts
	}
	// The read lock keeps Close, which takes the write lock before stopping the loops, from
	// stopping the loop between the check and the hand-over.
	h.mu.RLock()
	if h.closed {
		h.mu.RUnlock()
		h.reject(&v)
		return errClosed
	}
	s := h.homeFor(&v)
	s.size.Add(1)
	if s.onItsLoop(&v) {
		h.mu.RUnlock() // register may give the viewer back, which takes h.mu
		s.register(&v)
		return nil
	}
	s.add(&v)
	h.mu.RUnlock()
	return nil
}

// reject gives back everything a viewer that will not be served holds: its connection, its post
// references, its admission and its OnClose. It is the one way out for a viewer that never
// became a loop's.
func (h *Hub) reject(v *Viewer) {
	if v.Conn != nil {
		_ = v.Conn.Close()
	}
	h.posts.Release(v.Posts)
	h.admitted.Add(-1)
	if v.OnClose != nil {
		v.OnClose()
	}
}

// Drain closes every viewer, spreading the closes evenly over window so that the viewers
// reconnect (to other nodes) in a trickle rather than a storm. It returns when all are closed
// (including viewers that were in setup) or ctx is done.
func (h *Hub) Drain(ctx context.Context, window time.Duration) {
	for _, s := range h.loops {
		s.startDrain(window)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for h.admitted.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops the loops and closes every connection, giving back the viewers' references to the
// registry. It waits for every goroutine of the hub.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	for _, s := range h.loops {
		s.stop()
	}
	h.wg.Wait()
}

// Stats returns the hub's live counters.
func (h *Hub) Stats() *Stats { return &h.stats }

// Loops returns the number of loops.
func (h *Hub) Loops() int { return len(h.loops) }

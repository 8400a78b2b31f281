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

	"github.com/likes/likes/pkg/update"
)

// Subscriber is the Redis side of the hub: it subscribes the node to a post's channel and
// unsubscribes it again. Subscribe returns once the subscription is active, so that a snapshot read
// after it cannot miss an update; when it fails it leaves the node unsubscribed. Unsubscribe drops
// several posts in one call and must return in bounded time. The hub never calls either with a
// lock held, and never has a Subscribe and an Unsubscribe of the same post in flight at once.
type Subscriber interface {
	Subscribe(ctx context.Context, postID string) error
	Unsubscribe(postIDs []string)
}

// Config tunes the engine.
type Config struct {
	Loops            int           // 0: GOMAXPROCS
	FlushWindow      time.Duration // 0: write each update at once; >0: batch a viewer's frames per window
	MaxBatchFrames   int           // frames of one post per batch before conflating to the newest; 0: 32
	PostRate         float64       // max updates per second per post to viewers; 0: the display budget decides
	DisplayBudget    float64       // frames a second one post may cost this node, all its viewers together; 0: every update (display.go)
	DisplayMinRate   float64       // updates a second the display budget shows a post at least
	Heartbeat        time.Duration // a viewer that heard nothing for this long gets its owed watching numbers, else ": ping"
	StallTimeout     time.Duration // a viewer whose socket has not drained for this long is dropped; 0: never
	UnsubscribeGrace time.Duration // delay between the last viewer leaving and UNSUBSCRIBE
	SubscribeTimeout time.Duration // how long a subscription may wait for Redis to confirm; 0: 10s
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
	if c.SubscribeTimeout <= 0 {
		c.SubscribeTimeout = 10 * time.Second
	}
}

var (
	errClosed       = errors.New("hub closed")
	errTooManyPosts = fmt.Errorf("more than %d posts for one viewer", MaxPosts)
)

// Hub owns the posts with local viewers and the loops that hold the viewers.
type Hub struct {
	cfg      Config
	sub      Subscriber
	log      *zap.Logger
	loops    []*loop
	next     atomic.Uint32
	stats    Stats
	admitted atomic.Int64 // viewers admitted by Reserve and not gone yet: in setup or connected

	// mu guards the post map, each post's subscription and the unsubscriber's queue. It is never
	// held across a call to the Subscriber: Redis I/O runs on the hub's own goroutines, and only
	// the post concerned waits for it.
	mu           sync.RWMutex
	posts        map[string]*Post // a post stays here while leaving, until a successor replaces it
	leavingPosts int              // posts in the map whose UNSUBSCRIBE is in flight
	unsub        unsubscriber
	closed       bool

	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// New starts a hub with cfg.Loops loop goroutines and its unsubscriber; Close stops them.
func New(cfg Config, sub Subscriber, log *zap.Logger) (*Hub, error) {
	cfg.defaults()
	h := &Hub{
		cfg: cfg, sub: sub, log: log,
		posts: make(map[string]*Post), unsub: newUnsubscriber(), done: make(chan struct{}),
	}
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
	h.wg.Add(1)
	go func() { // exits when Close closes h.done
		defer h.wg.Done()
		h.unsubscribeLoop()
	}()
	return h, nil
}

// Publish hands an update to the hub. It never blocks on viewers: it records the post's newest
// frame and marks the post dirty in every loop. An update older than what the hub has is dropped,
// and so is one for a post whose subscription is not live (still subscribing, or leaving): it came
// from another subscription of the channel.
func (h *Hub) Publish(u update.Update) {
	h.mu.RLock()
	p := h.posts[u.PostID]
	h.mu.RUnlock()
	if p == nil || !p.receives() {
		return
	}
	// offer checks again under the post's lock; this check only spares encoding a frame for a
	// message that is already stale.
	if old := p.latest.Load(); old != nil && !u.Newer(old.u) {
		h.stats.Stale.Add(1)
		return
	}
	if !p.offer(newFrame(u)) {
		h.stats.Stale.Add(1)
		return
	}
	h.stats.Updates.Add(1)
	for _, s := range h.loops {
		s.markDirty(p)
	}
}

// Subscriptions returns how many posts the node is subscribed to (or subscribing), not counting
// those whose UNSUBSCRIBE is in flight.
func (h *Hub) Subscriptions() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.posts) - h.leavingPosts
}

// Viewer describes a new viewer for Add.
type Viewer struct {
	Conn     net.Conn                          // hijacked connection, owned by the hub from Add on
	Posts    []*Post                           // acquired posts, at most MaxPosts; their references pass to the hub
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
	h.Release(v.Posts)
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

// Close stops the loops, closes every connection, cancels subscriptions in flight and drops
// pending unsubscriptions. It waits for every goroutine of the hub.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for _, p := range h.posts {
		if p.cancel != nil {
			p.cancel()
		}
	}
	h.mu.Unlock()
	close(h.done)
	for _, s := range h.loops {
		s.stop()
	}
	h.wg.Wait()
}

// Stats returns the hub's live counters.
func (h *Hub) Stats() *Stats { return &h.stats }

// Loops returns the number of loops.
func (h *Hub) Loops() int { return len(h.loops) }

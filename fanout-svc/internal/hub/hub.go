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
// after it cannot miss an update.
type Subscriber interface {
	Subscribe(ctx context.Context, postID string) error
	Unsubscribe(postID string)
}

// Config tunes the engine.
type Config struct {
	Shards           int           // 0: GOMAXPROCS
	FlushWindow      time.Duration // 0: write each update at once; >0: batch a viewer's frames per window
	MaxBatchFrames   int           // frames of one post per batch before conflating to the newest; 0: 32
	PostRate         float64       // max updates per second per post to viewers; 0: no cap
	Heartbeat        time.Duration // idle viewers get ": ping" this often
	StallTimeout     time.Duration // a viewer whose socket has not drained for this long is dropped; 0: never
	UnsubscribeGrace time.Duration // delay between the last viewer leaving and UNSUBSCRIBE
	// SendBuffer caps each viewer socket's kernel send buffer (SO_SNDBUF); 0: the kernel's
	// autotuning, which lets a never-reading client pin megabytes of kernel memory until the stall
	// timeout. A count stream needs a few frames of buffer, not megabytes.
	SendBuffer int
}

func (c *Config) defaults() {
	if c.Shards <= 0 {
		c.Shards = runtime.GOMAXPROCS(0)
	}
	if c.MaxBatchFrames <= 0 {
		c.MaxBatchFrames = 32
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
}

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("hub closed")

// Hub owns the posts with local viewers and the shards that hold the viewers.
type Hub struct {
	cfg    Config
	sub    Subscriber
	log    *zap.Logger
	shards []*shard
	next   atomic.Uint32
	stats  Stats

	mu     sync.RWMutex
	posts  map[string]*Post
	closed bool

	wg sync.WaitGroup
}

// New starts a hub with cfg.Shards shard goroutines; Close stops them.
func New(cfg Config, sub Subscriber, log *zap.Logger) (*Hub, error) {
	cfg.defaults()
	h := &Hub{cfg: cfg, sub: sub, log: log, posts: make(map[string]*Post)}
	for i := 0; i < cfg.Shards; i++ {
		s, err := newShard(i, h)
		if err != nil {
			for _, prev := range h.shards {
				prev.poller.Close()
			}
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		h.shards = append(h.shards, s)
	}
	for _, s := range h.shards {
		h.wg.Add(1)
		go func() { // exits when Close stops the shard
			defer h.wg.Done()
			s.run()
		}()
	}
	return h, nil
}

// Acquire takes a reference on each post for a viewer that is about to be added, subscribing the
// node to posts that had no local viewers. It returns once every subscription is active. On error
// no reference is kept.
func (h *Hub) Acquire(ctx context.Context, ids []string) ([]*Post, error) {
	posts := make([]*Post, 0, len(ids))
	for _, id := range ids {
		p, err := h.acquire(ctx, id)
		if err != nil {
			h.Release(posts)
			return nil, err
		}
		posts = append(posts, p)
	}
	return posts, nil
}

func (h *Hub) acquire(ctx context.Context, id string) (*Post, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	p := h.posts[id]
	first := p == nil
	if first {
		p = &Post{id: id, ready: make(chan struct{})}
		h.posts[id] = p
	}
	p.refs++
	if p.unsubTimer != nil {
		p.unsubTimer.Stop()
		p.unsubTimer = nil
	}
	h.mu.Unlock()

	if first {
		err := h.sub.Subscribe(ctx, id)
		h.mu.Lock()
		p.err = err
		if err != nil && h.posts[id] == p {
			delete(h.posts, id) // the next viewer starts afresh
		}
		close(p.ready)
		h.mu.Unlock()
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
		h.Release([]*Post{p})
		return nil, ctx.Err()
	}
	if p.err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", id, p.err)
	}
	return p, nil
}

// Release drops one reference on each post. A post left without references is unsubscribed after
// the grace period unless a viewer comes back, so a page refresh does not flap the subscription.
func (h *Hub) Release(posts []*Post) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range posts {
		p.refs--
		if p.refs > 0 || p.err != nil || h.posts[p.id] != p || h.closed {
			continue
		}
		p := p
		p.unsubTimer = time.AfterFunc(h.cfg.UnsubscribeGrace, func() { h.unsubscribeIdle(p) })
	}
}

// unsubscribeIdle runs on the grace timer. It unsubscribes while holding h.mu so that a viewer
// arriving at that moment subscribes after the UNSUBSCRIBE reached Redis, never before it.
func (h *Hub) unsubscribeIdle(p *Post) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.refs > 0 || h.posts[p.id] != p || h.closed {
		return
	}
	delete(h.posts, p.id)
	h.sub.Unsubscribe(p.id)
}

// Publish hands an update to the hub. It never blocks on viewers: it records the post's newest
// frame and marks the post dirty in every shard. An update older than what the hub has is dropped.
func (h *Hub) Publish(u update.Update) {
	h.mu.RLock()
	p := h.posts[u.PostID]
	h.mu.RUnlock()
	if p == nil {
		return
	}
	// offer checks again under the post's lock; this check only spares encoding a frame for a
	// message that is already stale.
	if old := p.latest.Load(); old != nil && old.u.TS >= u.TS {
		h.stats.Stale.Add(1)
		return
	}
	if !p.offer(newFrame(u)) {
		h.stats.Stale.Add(1)
		return
	}
	h.stats.Updates.Add(1)
	for _, s := range h.shards {
		s.markDirty(p)
	}
}

// Subscriptions returns how many posts the node is subscribed to.
func (h *Hub) Subscriptions() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.posts)
}

// Viewer describes a new viewer for Add.
type Viewer struct {
	Conn     net.Conn                          // hijacked connection, owned by the hub from Add on
	Posts    []*Post                           // acquired posts; their references pass to the hub
	Snapshot []update.Update                   // the state of each post read after subscribing
	Multi    bool                              // multi-post stream (ids are versions, not counts)
	Preamble []byte                            // response headers and retry hint, written first
	Resume   func(i int, f update.Update) bool // reports whether post i's state is news to a resuming viewer; nil: all is news
	OnClose  func()                            // called by the shard once the viewer is gone; may be nil
}

// Reserve counts a viewer that is about to be added, unless max (>0) viewers are already there.
// Each successful Reserve is matched by Unreserve if the viewer never reaches Add; after Add the
// hub uncounts it when it goes.
func (h *Hub) Reserve(max int) bool {
	if n := h.stats.Viewers.Add(1); max > 0 && n > int64(max) {
		h.stats.Viewers.Add(-1)
		return false
	}
	return true
}

// Unreserve returns a reservation for a viewer that was never added.
func (h *Hub) Unreserve() { h.stats.Viewers.Add(-1) }

// Add hands a hijacked connection to a shard, which writes the preamble and each post's current
// state, then live updates. The hub owns the connection and the post references from here on,
// also when Add fails.
func (h *Hub) Add(v Viewer) error {
	h.mu.RLock()
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		_ = v.Conn.Close()
		h.Release(v.Posts)
		h.stats.Viewers.Add(-1)
		return ErrClosed
	}
	s := h.shards[int(h.next.Add(1))%len(h.shards)]
	s.add(&v)
	return nil
}

// Drain closes every viewer, spreading the closes evenly over window so that the viewers
// reconnect (to other nodes) in a trickle rather than a storm. It returns when all are closed or
// ctx is done.
func (h *Hub) Drain(ctx context.Context, window time.Duration) {
	for _, s := range h.shards {
		s.startDrain(window)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for h.stats.Viewers.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops the shards, closes every connection and cancels pending unsubscriptions.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for _, p := range h.posts {
		if p.unsubTimer != nil {
			p.unsubTimer.Stop()
		}
	}
	h.mu.Unlock()
	for _, s := range h.shards {
		s.stop()
	}
	h.wg.Wait()
}

// Stats returns the hub's live counters.
func (h *Hub) Stats() *Stats { return &h.stats }

// Shards returns the number of shards.
func (h *Hub) Shards() int { return len(h.shards) }

package posts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Subscriber is the Redis side of the registry: it subscribes the node to a post's channel and
// unsubscribes it again. Subscribe returns once the subscription is active, so that a snapshot read
// after it cannot miss an update (the relay holds a post that does not exist yet off Redis, and
// delivers its first change once it is created); when it fails it leaves the node unsubscribed. Unsubscribe drops
// several posts in one call and must return in bounded time. The registry never calls either with
// a lock held, and never has a Subscribe and an Unsubscribe of the same post in flight at once.
type Subscriber interface {
	Subscribe(ctx context.Context, postID string) error
	Unsubscribe(postIDs []string)
}

// Config tunes the registry.
type Config struct {
	UnsubscribeGrace time.Duration // delay between the last viewer leaving and UNSUBSCRIBE
	SubscribeTimeout time.Duration // how long a subscription may wait for Redis to confirm; 0: 10s
}

// MaxPosts is the most posts one viewer may hold: the hub keeps a viewer's owed posts as the bits
// of one uint64.
const MaxPosts = 64

var (
	errClosed       = errors.New("posts closed")
	errTooManyPosts = fmt.Errorf("more than %d posts for one viewer", MaxPosts)
)

// Registry holds the posts with local viewers and their subscriptions. Each of its three kinds of
// state has its own lock, so that an update, a viewer of one post and a viewer of another do not
// wait for each other: the post map (mu), each post's subscription (its subscription.mu), and the
// unsubscriber's queue (unsubscriber.mu). None is held across a call to the Subscriber: Redis I/O
// runs on the registry's own goroutines, and only the post concerned waits for it. The order in
// which they may be taken is in fanout-svc/LOCKS.md.
type Registry struct {
	cfg Config
	sub Subscriber

	// mu guards the post map and closed. Every update reads the map under it (Receiving); only
	// a new post, a successor, a post leaving the map and Close write it. A post's
	// subscription.mu may be taken under it, never the other way round.
	mu     sync.RWMutex
	posts  map[string]*Post // a post stays here while leaving, until a successor replaces it
	closed bool

	live  atomic.Int64 // posts subscribed or subscribing: in the map, neither leaving nor failed
	unsub unsubscriber // the idle posts by the end of their grace period, under its own lock

	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// New starts a registry and its unsubscriber; Close stops them.
func New(cfg Config, sub Subscriber) *Registry {
	if cfg.SubscribeTimeout <= 0 {
		cfg.SubscribeTimeout = 10 * time.Second
	}
	r := &Registry{cfg: cfg, sub: sub, posts: make(map[string]*Post), unsub: newUnsubscriber(), done: make(chan struct{})}
	r.wg.Add(1)
	go func() { // exits when Close closes r.done
		defer r.wg.Done()
		r.unsubscribeLoop()
	}()
	return r
}

// Receiving returns the post id if its subscription is live (frames arriving for it now come
// from the node's subscription), else nil.
func (r *Registry) Receiving(id string) *Post {
	r.mu.RLock()
	p := r.posts[id]
	r.mu.RUnlock()
	if p == nil || !p.sub.receives() {
		return nil
	}
	return p
}

// Lookup returns the post id in whatever state its subscription is, nil when the node has none.
func (r *Registry) Lookup(id string) *Post {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.posts[id]
}

// Subscriptions returns how many posts the node is subscribed to (or subscribing), not counting
// those whose UNSUBSCRIBE is in flight.
func (r *Registry) Subscriptions() int { return int(r.live.Load()) }

// LocalViewers calls fn once for each post with local viewers, with their number: a viewer of a
// multi-post stream counts once for each of its posts. It runs under the registry's read lock,
// taking each post's subscription lock in turn, in time proportional to the posts, not the
// viewers; fn must not block.
func (r *Registry) LocalViewers(fn func(post string, viewers int)) { r.localViewers(false, fn) }

// ExistingViewers is LocalViewers for the posts that exist (Post.Exists): the watching counter's,
// so that the "watching now" keys of made-up posts, which anyone can open streams of, cost Redis
// nothing.
func (r *Registry) ExistingViewers(fn func(post string, viewers int)) { r.localViewers(true, fn) }

func (r *Registry) localViewers(existing bool, fn func(post string, viewers int)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for id, p := range r.posts {
		if existing && !p.Exists() {
			continue
		}
		p.sub.mu.Lock()
		refs, err := p.sub.refs, p.sub.err
		p.sub.mu.Unlock()
		if refs > 0 && err == nil {
			fn(id, refs)
		}
	}
}

// Close cancels the subscriptions in flight and drops the pending unsubscriptions; references
// released after it are dropped. It waits for every goroutine of the registry.
func (r *Registry) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for _, p := range r.posts {
		p.sub.mu.Lock()
		if p.sub.cancel != nil {
			p.sub.cancel()
		}
		p.sub.mu.Unlock()
	}
	r.mu.Unlock()
	r.unsub.close()
	close(r.done)
	r.wg.Wait()
}

// Acquire takes a reference on each post for a viewer that is about to be added, subscribing the
// node to posts that had no local viewers. It returns once every subscription is active. The
// subscriptions run on the registry's goroutines, all at once, under a context the registry owns: a
// viewer that gives up (ctx done) leaves alone, and the viewers waiting on the same subscription
// keep waiting. On error no reference is kept.
func (r *Registry) Acquire(ctx context.Context, ids []string) ([]*Post, error) {
	if len(ids) > MaxPosts {
		return nil, errTooManyPosts
	}
	posts, err := r.take(ids)
	if err != nil {
		return nil, err
	}
	for _, p := range posts {
		select {
		case <-p.sub.ready:
		case <-ctx.Done():
			r.Release(posts)
			return nil, ctx.Err()
		}
		if p.sub.err != nil { // written before ready was closed, never after
			r.Release(posts)
			return nil, fmt.Errorf("subscribe %s: %w", p.id, p.sub.err)
		}
	}
	return posts, nil
}

// AcquireKnown is Acquire for a caller that must not wait (an event loop serving a connect): it
// takes a reference on each post only if every one is subscribed and Known, so that the viewer
// needs neither a SUBSCRIBE nor a snapshot, and reports false, holding nothing, otherwise.
func (r *Registry) AcquireKnown(ids []string) ([]*Post, bool) {
	if len(ids) > MaxPosts {
		return nil, false
	}
	posts := make([]*Post, len(ids))
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return nil, false
	}
	for i, id := range ids {
		p := r.posts[id]
		if p == nil || !p.sub.receives() || !p.Known() {
			r.mu.RUnlock()
			return nil, false
		}
		posts[i] = p
	}
	for i, p := range posts {
		p.sub.mu.Lock()
		ok := p.sub.holdReceiving() // false only if its grace period ended since the check above
		p.sub.mu.Unlock()
		if !ok {
			r.mu.RUnlock()
			r.Release(posts[:i])
			return nil, false
		}
	}
	r.mu.RUnlock()
	return posts, true
}

// take references each post, creating the posts the node has no live subscription for and
// starting their subscriptions. Posts the node has are held under the map's read lock; only new
// ones take it for writing. A post whose UNSUBSCRIBE is in flight gets a successor that subscribes
// once it returned, so that Redis sees them in that order.
func (r *Registry) take(ids []string) ([]*Post, error) {
	posts := make([]*Post, len(ids))
	missing := false
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return nil, errClosed
	}
	for i, id := range ids {
		p := r.posts[id]
		if p == nil {
			missing = true
			continue
		}
		p.sub.mu.Lock()
		ok, _ := p.sub.hold()
		p.sub.mu.Unlock()
		if ok {
			posts[i] = p
		} else {
			missing = true
		}
	}
	r.mu.RUnlock()
	if missing && !r.create(ids, posts) {
		r.releaseHeld(posts)
		return nil, errClosed
	}
	return posts, nil
}

// create fills the gaps take left in posts: under the map's write lock, each id gets the post
// the map holds now if it can be held, else a new one, which replaces a leaving predecessor. It
// reports false, having created nothing, once the registry is closed.
func (r *Registry) create(ids []string, posts []*Post) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	for i, id := range ids {
		if posts[i] != nil {
			continue
		}
		var after <-chan struct{}
		if p := r.posts[id]; p != nil {
			p.sub.mu.Lock()
			ok, left := p.sub.hold()
			p.sub.mu.Unlock()
			if ok {
				posts[i] = p
				continue
			}
			after = left // leaving: its successor subscribes once its UNSUBSCRIBE returned
		}
		p := r.startSubscribe(id, after)
		r.posts[id] = p
		r.live.Add(1)
		posts[i] = p
	}
	return true
}

// releaseHeld releases the posts take held before it found the registry closed.
func (r *Registry) releaseHeld(posts []*Post) {
	for i, p := range posts {
		if p != nil {
			r.Release(posts[i : i+1])
		}
	}
}

// startSubscribe creates post id, holding the caller's reference, and subscribes it on a goroutine
// of the registry, after after is closed (the UNSUBSCRIBE of the post's previous subscription
// returned), under a context the registry owns. r.mu is held for writing.
func (r *Registry) startSubscribe(id string, after <-chan struct{}) *Post {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.SubscribeTimeout)
	p := &Post{id: id, sub: newSubscription(cancel)}
	r.wg.Add(1)
	go func() { // exits when Redis confirms, refuses or times out, or Close cancels ctx
		defer r.wg.Done()
		defer cancel()
		if after != nil {
			select {
			case <-after:
			case <-ctx.Done():
			}
		}
		err := ctx.Err()
		if err == nil {
			err = r.sub.Subscribe(ctx, p.id)
		}
		r.subscribed(p, err)
	}()
	return p
}

// subscribed records the outcome of p's subscription and wakes its waiters. A failed post leaves
// the map in the same step (under the map's lock), so the next viewer tries afresh and no one
// finds it failed there; a post whose viewers all gave up meanwhile starts its grace period now.
func (r *Registry) subscribed(p *Post, err error) {
	if err != nil {
		r.mu.Lock()
		p.sub.mu.Lock()
		p.sub.confirmed(err, time.Time{})
		p.sub.mu.Unlock()
		if r.posts[p.id] == p {
			delete(r.posts, p.id)
		}
		r.live.Add(-1)
		r.mu.Unlock()
		return
	}
	p.sub.mu.Lock()
	nowIdle := p.sub.confirmed(nil, time.Now())
	due := p.sub.idleSince.Add(r.cfg.UnsubscribeGrace)
	p.sub.mu.Unlock()
	if nowIdle {
		r.unsub.queue(p, due)
	}
}

// Release drops one reference on each post. A subscribed post left without references is
// unsubscribed after the grace period unless a viewer comes back, so a page refresh does not flap
// the subscription. It takes each post's lock, then the unsubscriber's, never the map's.
func (r *Registry) Release(posts []*Post) {
	if len(posts) == 0 {
		return
	}
	now := time.Now()
	for _, p := range posts {
		p.sub.mu.Lock()
		nowIdle := p.sub.drop(now)
		p.sub.mu.Unlock()
		if nowIdle {
			r.unsub.queue(p, now.Add(r.cfg.UnsubscribeGrace))
		}
	}
}

package posts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Subscriber is the Redis side of the registry: it subscribes the node to a post's channel and
// unsubscribes it again. Subscribe returns once the subscription is active, so that a snapshot read
// after it cannot miss an update; when it fails it leaves the node unsubscribed. Unsubscribe drops
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

// Registry holds the posts with local viewers and their subscriptions.
type Registry struct {
	cfg Config
	sub Subscriber

	// mu guards the post map, each post's subscription and the unsubscriber's queue. It is never
	// held across a call to the Subscriber: Redis I/O runs on the registry's own goroutines, and
	// only the post concerned waits for it.
	mu           sync.RWMutex
	posts        map[string]*Post // a post stays here while leaving, until a successor replaces it
	leavingPosts int              // posts in the map whose UNSUBSCRIBE is in flight
	unsub        unsubscriber
	closed       bool

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
	if p == nil || !p.receives() {
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
func (r *Registry) Subscriptions() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.posts) - r.leavingPosts
}

// LocalViewers calls fn once for each post with local viewers, with their number: a viewer of a
// multi-post stream counts once for each of its posts. It runs under the registry's read lock, in
// time proportional to the posts, not the viewers; fn must not block.
func (r *Registry) LocalViewers(fn func(post string, viewers int)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for id, p := range r.posts {
		if p.refs > 0 && p.err == nil {
			fn(id, p.refs)
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
		if p.cancel != nil {
			p.cancel()
		}
	}
	r.mu.Unlock()
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
		case <-p.ready:
		case <-ctx.Done():
			r.Release(posts)
			return nil, ctx.Err()
		}
		if p.err != nil {
			r.Release(posts)
			return nil, fmt.Errorf("subscribe %s: %w", p.id, p.err)
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false
	}
	posts := make([]*Post, len(ids))
	for i, id := range ids {
		p := r.posts[id]
		if p == nil || !p.receives() || !p.Known() {
			return nil, false
		}
		posts[i] = p
	}
	for _, p := range posts {
		p.hold()
	}
	return posts, true
}

// take references each post, creating the posts the node has no live subscription for and
// starting their subscriptions. A post whose UNSUBSCRIBE is in flight gets a successor that
// subscribes once it returned, so that Redis sees them in that order.
func (r *Registry) take(ids []string) ([]*Post, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	posts := make([]*Post, len(ids))
	for i, id := range ids {
		p := r.posts[id]
		if p == nil || p.is() == leaving {
			var after <-chan struct{}
			if p != nil {
				after = p.left
				r.leavingPosts-- // no longer in the map: its successor is
			}
			p = &Post{id: id, subscription: newSubscription()}
			r.posts[id] = p
			r.startSubscribe(p, after)
		}
		p.hold()
		posts[i] = p
	}
	return posts, nil
}

// startSubscribe subscribes p on a goroutine of the registry, after after is closed (the UNSUBSCRIBE
// of the post's previous subscription returned). r.mu is held.
func (r *Registry) startSubscribe(p *Post, after <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.SubscribeTimeout)
	p.cancel = cancel
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
}

// subscribed records the outcome of p's subscription and wakes its waiters. A failed post leaves
// the map, so the next viewer tries afresh; a post whose viewers all gave up meanwhile starts its
// grace period now.
func (r *Registry) subscribed(p *Post, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.confirmed(err, time.Now()) && !r.closed {
		r.unsub.queue(p, r.cfg.UnsubscribeGrace)
	}
	if err != nil && r.posts[p.id] == p {
		delete(r.posts, p.id)
	}
}

// Release drops one reference on each post. A subscribed post left without references is
// unsubscribed after the grace period unless a viewer comes back, so a page refresh does not flap
// the subscription.
func (r *Registry) Release(posts []*Post) {
	if len(posts) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for _, p := range posts {
		if p.drop(now) && !r.closed {
			r.unsub.queue(p, r.cfg.UnsubscribeGrace)
		}
	}
}

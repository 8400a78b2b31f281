package hub

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/likes/likes/pkg/update"
)

// subState is where a post's Redis subscription is in its life on this node:
//
//	subscribing -> active <-> idle -> leaving
//	     \-> failed
//
// Only an active or idle subscription hands frames to the post (receives): anything that arrives
// while it is subscribing or leaving belongs to another subscription of the same channel.
type subState uint32

const (
	subscribing subState = iota // SUBSCRIBE sent; viewers wait on ready
	active                      // confirmed, with viewers (or viewers in setup)
	idle                        // confirmed, no viewers; UNSUBSCRIBE once the grace period ends
	leaving                     // UNSUBSCRIBE in flight; a returning viewer's post waits on left
	failed                      // refused or timed out; out of the post map
)

var subStateNames = [...]string{"subscribing", "active", "idle", "leaving", "failed"}

func (s subState) String() string { return subStateNames[s] }

// subscription is a post's Redis subscription and the viewers that hold it. Every field is
// written under Hub.mu; state is also read without it (Publish), hence atomic. The transitions
// below are the only writers.
type subscription struct {
	state     atomic.Uint32      // subState
	refs      int                // viewers holding the post, including viewers in setup
	ready     chan struct{}      // closed when subscribing ends (active, idle or failed)
	err       error              // why it failed; set before ready is closed
	cancel    context.CancelFunc // cancels the SUBSCRIBE in flight; nil once it ended
	idleSince time.Time          // when it last became idle
	queued    bool               // in the unsubscriber's queue
	left      chan struct{}      // closed when leaving ends (the UNSUBSCRIBE returned)
}

func newSubscription() subscription { return subscription{ready: make(chan struct{})} }

func (s *subscription) is() subState { return subState(s.state.Load()) }

func (s *subscription) set(to subState) { s.state.Store(uint32(to)) }

// receives reports whether frames arriving for the post now come from this subscription.
func (s *subscription) receives() bool {
	st := s.is()
	return st == active || st == idle
}

// confirmed ends subscribing with Redis's answer; it reports whether the post is now idle (its
// viewers all gave up while it waited), so that its grace period starts.
func (s *subscription) confirmed(err error, now time.Time) (nowIdle bool) {
	s.err, s.cancel = err, nil
	switch {
	case err != nil:
		s.set(failed)
	case s.refs == 0:
		s.set(idle)
		s.idleSince = now
		nowIdle = true
	default:
		s.set(active)
	}
	close(s.ready)
	return nowIdle
}

// hold takes a reference; a viewer returning within the grace period makes the post active again.
func (s *subscription) hold() {
	s.refs++
	if s.is() == idle {
		s.set(active)
	}
}

// drop gives back a reference; it reports whether the post became idle.
func (s *subscription) drop(now time.Time) (nowIdle bool) {
	s.refs--
	if s.refs > 0 || s.is() != active {
		return false
	}
	s.set(idle)
	s.idleSince = now
	return true
}

// leave starts the UNSUBSCRIBE of an idle post.
func (s *subscription) leave() {
	s.set(leaving)
	s.left = make(chan struct{})
}

// Acquire takes a reference on each post for a viewer that is about to be added, subscribing the
// node to posts that had no local viewers. It returns once every subscription is active. The
// subscriptions run on the hub's goroutines, all at once, under a context the hub owns: a viewer
// that gives up (ctx done) leaves alone, and the viewers waiting on the same subscription keep
// waiting. On error no reference is kept.
func (h *Hub) Acquire(ctx context.Context, ids []string) ([]*Post, error) {
	if len(ids) > MaxPosts {
		return nil, errTooManyPosts
	}
	posts, err := h.take(ids)
	if err != nil {
		return nil, err
	}
	for _, p := range posts {
		select {
		case <-p.ready:
		case <-ctx.Done():
			h.Release(posts)
			return nil, ctx.Err()
		}
		if p.err != nil {
			h.Release(posts)
			return nil, fmt.Errorf("subscribe %s: %w", p.id, p.err)
		}
	}
	return posts, nil
}

// AcquireKnown is Acquire for a caller that must not wait (an event loop serving a connect): it
// takes a reference on each post only if every one is subscribed and Known, so that the viewer
// needs neither a SUBSCRIBE nor a snapshot, and reports false, holding nothing, otherwise.
func (h *Hub) AcquireKnown(ids []string) ([]*Post, bool) {
	if len(ids) > MaxPosts {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	posts := make([]*Post, len(ids))
	for i, id := range ids {
		p := h.posts[id]
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
func (h *Hub) take(ids []string) ([]*Post, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	posts := make([]*Post, len(ids))
	for i, id := range ids {
		p := h.posts[id]
		if p == nil || p.is() == leaving {
			var after <-chan struct{}
			if p != nil {
				after = p.left
				h.leavingPosts-- // no longer in the map: its successor is
			}
			p = &Post{id: id, subscription: newSubscription()}
			h.posts[id] = p
			h.startSubscribe(p, after)
		}
		p.hold()
		posts[i] = p
	}
	return posts, nil
}

// startSubscribe subscribes p on a goroutine of the hub, after after is closed (the UNSUBSCRIBE
// of the post's previous subscription returned). h.mu is held.
func (h *Hub) startSubscribe(p *Post, after <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.SubscribeTimeout)
	p.cancel = cancel
	h.wg.Add(1)
	go func() { // exits when Redis confirms, refuses or times out, or Close cancels ctx
		defer h.wg.Done()
		defer cancel()
		if after != nil {
			select {
			case <-after:
			case <-ctx.Done():
			}
		}
		err := ctx.Err()
		if err == nil {
			err = h.sub.Subscribe(ctx, p.id)
		}
		h.subscribed(p, err)
	}()
}

// subscribed records the outcome of p's subscription and wakes its waiters. A failed post leaves
// the map, so the next viewer tries afresh; a post whose viewers all gave up meanwhile starts its
// grace period now.
func (h *Hub) subscribed(p *Post, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.confirmed(err, time.Now()) && !h.closed {
		h.unsub.queue(p, h.cfg.UnsubscribeGrace)
	}
	if err != nil && h.posts[p.id] == p {
		delete(h.posts, p.id)
	}
}

// Release drops one reference on each post. A subscribed post left without references is
// unsubscribed after the grace period unless a viewer comes back, so a page refresh does not flap
// the subscription.
func (h *Hub) Release(posts []*Post) {
	if len(posts) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for _, p := range posts {
		if p.drop(now) && !h.closed {
			h.unsub.queue(p, h.cfg.UnsubscribeGrace)
		}
	}
}

// Prime gives the hub a post's state read from Redis after the post's subscription became live
// (a new viewer's snapshot). From then on the post is Known: the node has seen every change
// since, and later viewers start from its newest frame without a read of their own.
func (h *Hub) Prime(u update.Update) {
	h.mu.RLock()
	p := h.posts[u.PostID]
	h.mu.RUnlock()
	if p == nil || !p.receives() {
		return
	}
	h.Publish(u)
	p.known.Store(true)
}

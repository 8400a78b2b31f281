package hub

import (
	"container/heap"
	"context"
	"fmt"
	"time"
)

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

// take references each post, creating the posts the node has no subscription for and starting
// their subscriptions.
func (h *Hub) take(ids []string) ([]*Post, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	posts := make([]*Post, len(ids))
	for i, id := range ids {
		p := h.posts[id]
		if p == nil {
			p = &Post{id: id, ready: make(chan struct{})}
			h.posts[id] = p
			h.startSubscribe(p, h.leaving[id])
		}
		p.refs++
		posts[i] = p
	}
	return posts, nil
}

// startSubscribe subscribes p on a goroutine of the hub, after the UNSUBSCRIBE of the post's
// previous subscription (after) returned, so that Redis sees them in that order. h.mu is held.
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
	p.err, p.cancel, p.active = err, nil, err == nil
	close(p.ready)
	switch {
	case err != nil:
		if h.posts[p.id] == p {
			delete(h.posts, p.id)
		}
	case p.refs == 0 && !h.closed:
		h.idleLocked(p)
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
	for _, p := range posts {
		p.refs--
		if p.refs == 0 && p.active && h.posts[p.id] == p && !h.closed {
			h.idleLocked(p)
		}
	}
}

// idleLocked starts p's grace period; h.mu is held.
func (h *Hub) idleLocked(p *Post) {
	p.idleSince = time.Now()
	if p.queued {
		return // the queued entry finds the new idleSince and waits longer
	}
	p.queued = true
	heap.Push(&h.idle, idleEntry{p: p, at: p.idleSince.Add(h.cfg.UnsubscribeGrace)})
	select {
	case h.idleWake <- struct{}{}:
	default:
	}
}

// unsubscribeLoop is the hub's one unsubscriber: it unsubscribes posts whose grace period ended
// without a viewer coming back, one at a time and without a lock, until Close.
func (h *Hub) unsubscribeLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p, wait := h.nextIdle()
		if p != nil {
			h.sub.Unsubscribe(p.id)
			h.unsubscribed(p)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-h.done:
			return
		case <-h.idleWake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// nextIdle returns the post to unsubscribe now, already out of the map and marked as leaving so
// that a viewer arriving for it subscribes only after the UNSUBSCRIBE; or else how long until the
// next grace period ends (0: none pending).
func (h *Hub) nextIdle() (*Post, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for len(h.idle) > 0 {
		e := h.idle[0]
		if now.Before(e.at) {
			return nil, e.at.Sub(now)
		}
		heap.Pop(&h.idle)
		p := e.p
		p.queued = false
		if p.refs > 0 || h.posts[p.id] != p || h.closed {
			continue
		}
		if due := p.idleSince.Add(h.cfg.UnsubscribeGrace); now.Before(due) {
			p.queued = true // released again since it was queued
			heap.Push(&h.idle, idleEntry{p: p, at: due})
			continue
		}
		delete(h.posts, p.id)
		p.left = make(chan struct{})
		h.leaving[p.id] = p.left
		return p, 0
	}
	return nil, 0
}

// unsubscribed lets a new subscription of p's post go ahead.
func (h *Hub) unsubscribed(p *Post) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leaving[p.id] == p.left {
		delete(h.leaving, p.id)
	}
	close(p.left)
}

// idleEntry is a post whose grace period ends at at.
type idleEntry struct {
	p  *Post
	at time.Time
}

// idleQueue is a min-heap of idle posts by deadline (container/heap).
type idleQueue []idleEntry

func (q idleQueue) Len() int           { return len(q) }
func (q idleQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q idleQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *idleQueue) Push(x any)        { *q = append(*q, x.(idleEntry)) }
func (q *idleQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = idleEntry{}
	*q = old[:len(old)-1]
	return e
}

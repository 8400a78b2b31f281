package posts

import (
	"container/heap"
	"time"
)

// unsubscribeBatch is the most posts one Unsubscribe call names, and unsubscribers how many calls
// may be in flight at once. A node whose viewers of 10,000 posts leave while Redis answers slowly
// (each call waits out the relay's 2 s bound) clears them in 20 calls, 4 at a time: about 10 s,
// where one post per call, one call at a time, would take 10,000 x 2 s, five and a half hours.
const (
	unsubscribeBatch = 500
	unsubscribers    = 4
)

// unsubscriber holds the idle posts by the end of their grace period, so that a page refresh does
// not flap the subscription. Its queue is guarded by Registry.mu; Registry.unsubscribeLoop takes
// the due posts off it in batches and unsubscribes them without a lock.
type unsubscriber struct {
	idle idleQueue
	wake chan struct{} // a new deadline to consider
}

func newUnsubscriber() unsubscriber { return unsubscriber{wake: make(chan struct{}, 1)} }

// queue schedules p's UNSUBSCRIBE for the end of its grace period. A post queued already keeps
// its entry, which finds the newer idleSince when it comes due and waits longer. r.mu is held.
func (u *unsubscriber) queue(p *Post, grace time.Duration) {
	if p.queued {
		return
	}
	p.queued = true
	heap.Push(&u.idle, idleEntry{p: p, at: p.idleSince.Add(grace)})
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// unsubscribeLoop unsubscribes the posts whose grace period ended without a viewer coming back,
// in batches of up to unsubscribeBatch, with up to unsubscribers batches in flight, until Close.
// A batch is taken off the queue only once a call can start, so that a viewer returning to a post
// still queued keeps its subscription.
func (r *Registry) unsubscribeLoop() {
	calls := make(chan struct{}, unsubscribers)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case calls <- struct{}{}:
		case <-r.done:
			return
		}
		batch, wait := r.dueIdle(unsubscribeBatch)
		if len(batch) > 0 {
			r.wg.Add(1)
			go func() { // exits when the call returns: the Subscriber bounds it
				defer r.wg.Done()
				defer func() { <-calls }()
				ids := make([]string, len(batch))
				for i, p := range batch {
					ids[i] = p.id
				}
				r.sub.Unsubscribe(ids)
				r.unsubscribed(batch)
			}()
			continue
		}
		<-calls
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-r.done:
			return
		case <-r.unsub.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// dueIdle takes up to n posts whose grace period ended and starts their leaving: they stay in the
// map, so that a viewer arriving for one subscribes only after the UNSUBSCRIBE. With none due, it
// returns how long until the next grace period ends (0: none pending).
func (r *Registry) dueIdle(n int) ([]*Post, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, 0
	}
	now := time.Now()
	var batch []*Post
	for len(r.unsub.idle) > 0 && len(batch) < n {
		e := r.unsub.idle[0]
		if now.Before(e.at) {
			if len(batch) == 0 {
				return nil, e.at.Sub(now)
			}
			break
		}
		heap.Pop(&r.unsub.idle)
		p := e.p
		p.queued = false
		if p.is() != idle || r.posts[p.id] != p {
			continue // a viewer came back, or the post failed
		}
		if due := p.idleSince.Add(r.cfg.UnsubscribeGrace); now.Before(due) {
			r.unsub.queue(p, r.cfg.UnsubscribeGrace) // released again since it was queued
			continue
		}
		p.leave()
		r.leavingPosts++
		batch = append(batch, p)
	}
	return batch, 0
}

// unsubscribed ends the leaving of each post in batch and lets their successors subscribe.
func (r *Registry) unsubscribed(batch []*Post) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range batch {
		if r.posts[p.id] == p {
			delete(r.posts, p.id)
			r.leavingPosts--
		}
		close(p.left)
	}
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

package posts

import (
	"container/heap"
	"sync"
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
// not flap the subscription. Its queue has its own lock, taken with no other held: a viewer
// leaving queues its posts without the map's lock, and Registry.unsubscribeLoop takes the due
// posts off it in batches and unsubscribes them without a lock.
type unsubscriber struct {
	wake chan struct{} // a new deadline to consider

	mu     sync.Mutex // guards idle, closed and each post's subscription.queued
	idle   idleQueue
	closed bool // set by Registry.Close: nothing is queued or taken after it
}

func newUnsubscriber() unsubscriber { return unsubscriber{wake: make(chan struct{}, 1)} }

// queue schedules p's UNSUBSCRIBE for at, the end of its grace period. A post queued already
// keeps its entry, which finds the newer idleSince when it comes due and waits longer.
func (u *unsubscriber) queue(p *Post, at time.Time) {
	u.mu.Lock()
	if u.closed || p.sub.queued {
		u.mu.Unlock()
		return
	}
	p.sub.queued = true
	heap.Push(&u.idle, idleEntry{p: p, at: at})
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// due takes up to n posts whose deadline passed off the queue and appends them to dst. With none
// due, it returns how long until the next deadline (0: none pending).
func (u *unsubscriber) due(now time.Time, n int, dst []*Post) ([]*Post, time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.idle) > 0 && n > 0 {
		e := u.idle[0]
		if now.Before(e.at) {
			if len(dst) == 0 {
				return nil, e.at.Sub(now)
			}
			break
		}
		heap.Pop(&u.idle)
		e.p.sub.queued = false
		dst = append(dst, e.p)
		n--
	}
	return dst, 0
}

// close drops the pending unsubscriptions; queue and due do nothing after it.
func (u *unsubscriber) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	u.idle = nil
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

// dueIdle takes up to n posts whose grace period ended off the unsubscriber's queue and starts
// their leaving: they stay in the map, so that a viewer arriving for one subscribes only after the
// UNSUBSCRIBE. A post a viewer came back to is skipped, and one released again since it was
// queued goes back in the queue. With none due, it returns how long until the next grace period
// ends (0: none pending). It takes the queue's lock, then each post's, one at a time.
func (r *Registry) dueIdle(n int) ([]*Post, time.Duration) {
	now := time.Now()
	var batch, due []*Post
	for len(batch) < n {
		var wait time.Duration
		due, wait = r.unsub.due(now, n-len(batch), due[:0])
		if len(due) == 0 {
			if len(batch) == 0 {
				return nil, wait
			}
			break
		}
		for _, p := range due {
			p.sub.mu.Lock()
			st, end := p.sub.is(), p.sub.idleSince.Add(r.cfg.UnsubscribeGrace)
			leaves := st == idle && !now.Before(end)
			if leaves {
				p.sub.leave()
				r.live.Add(-1)
			}
			p.sub.mu.Unlock()
			switch {
			case leaves:
				batch = append(batch, p)
			case st == idle:
				r.unsub.queue(p, end) // released again since it was queued
			}
		}
	}
	return batch, 0
}

// unsubscribed ends the leaving of each post in batch and lets their successors subscribe.
func (r *Registry) unsubscribed(batch []*Post) {
	r.mu.Lock()
	for _, p := range batch {
		if r.posts[p.id] == p {
			delete(r.posts, p.id)
		}
	}
	r.mu.Unlock()
	for _, p := range batch {
		p.sub.mu.Lock()
		close(p.sub.left)
		p.sub.mu.Unlock()
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

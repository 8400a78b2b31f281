package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A post exists once it has a version (rediskeys.Version): its first like or reaction gave it one.
// The viewers of a post that does not exist cost Redis nothing: the relay subscribes to no channel
// for it and the watching counter writes no key for it (it counts only posts with a version), so
// that any number of viewers of made-up posts hold no Redis memory. Subscribe reads the post's
// version first; a post without one waits, in memory only, until the relay hears of its creation
// on the one channel the like script announces creations on (rediskeys.Created), and then the
// relay subscribes to the post's channel and re-reads it (the resync path, which also delivers a
// change published before that SUBSCRIBE). Pub/sub delivers at most once, so whenever the
// creations channel is confirmed (at start, and again after a reconnect) the relay re-reads the
// version of every waiting post: a creation announced while the node was not listening is found
// there.

// recheckBatch is how many waiting posts one round trip re-reads, and activateBatch how many
// waiting posts that came to exist are subscribed at once.
const (
	recheckBatch  = 200
	activateBatch = 200
)

// clusterRecheck is how often a relay on a Redis Cluster re-reads every waiting post's version
// anyway. There a creation reaches the node the relay listens on over the cluster bus, which drops
// a message when the link between two nodes breaks, while the relay's own connection stays up and
// is never confirmed again: the post would wait until its viewers left. On one Redis (or
// Sentinel) a message is lost only with the connection, whose new confirmation re-reads them.
const clusterRecheck = time.Minute

// activateTimeout bounds one batch of subscriptions of posts that came to exist; a post whose
// subscription failed is tried again after activateRetry.
const (
	activateTimeout = 5 * time.Second
	activateRetry   = 500 * time.Millisecond
)

// absentPost is a post viewers wait on that had no version when the relay last read it. Its fields
// are guarded by Relay.mu.
type absentPost struct {
	checking   bool          // Subscribe is reading its version
	heard      bool          // its creation was heard while checking
	activating bool          // its channel is being subscribed
	done       chan struct{} // closed when the activation in flight ended; nil without one
}

// creations are the relay's waiting posts' work: what to activate and whether to re-read them
// all, for activateLoop. Guarded by its own lock, taken with no other.
type creations struct {
	mu      sync.Mutex
	pending map[string]struct{} // posts heard of (or found) created, to subscribe
	recheck bool                // re-read every waiting post's version
	signal  chan struct{}
}

func newCreations() creations {
	return creations{pending: make(map[string]struct{}), signal: make(chan struct{}, 1)}
}

func (c *creations) wake() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// waitIfAbsent reads whether post exists. If it does not, post waits for its creation and
// waitIfAbsent reports true: the caller must not subscribe its channel. The post is entered as
// waiting before its version is read, so that a creation announced during the read is not lost.
func (r *Relay) waitIfAbsent(ctx context.Context, post string) (bool, error) {
	e := &absentPost{checking: true}
	r.mu.Lock()
	r.absent[post] = e
	r.mu.Unlock()
	exists, err := r.exists(ctx, post)
	r.mu.Lock()
	if err != nil || exists {
		delete(r.absent, post)
		r.mu.Unlock()
		return false, err
	}
	e.checking = false
	heard := e.heard
	r.mu.Unlock()
	if heard {
		r.queueActivate(post)
	}
	return true, nil
}

// exists reads whether post has a version.
func (r *Relay) exists(ctx context.Context, post string) (bool, error) {
	err := r.client.Get(ctx, r.keys.Version(post)).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		r.stats.RedisErrors.Add(1)
		return false, fmt.Errorf("read version of %s: %w", post, err)
	}
	return true, nil
}

// forget drops a waiting post whose viewers left; it reports whether post was one, which has no
// channel to unsubscribe. An activation in flight is waited for (activateTimeout bounds it): the
// post then has a channel, or is waiting again.
func (r *Relay) forget(post string) bool {
	for {
		r.mu.Lock()
		e := r.absent[post]
		if e == nil {
			r.mu.Unlock()
			return false
		}
		if !e.activating {
			delete(r.absent, post)
			r.mu.Unlock()
			return true
		}
		done := e.done
		r.mu.Unlock()
		<-done
	}
}

// heard takes a post's creation (announced, or found by a re-read): it reports whether post waits
// and is to be queued for its subscription (by the caller, once it released r.mu, which it holds);
// one still being checked is queued once its check ends. Any other post is not this node's concern.
func (r *Relay) heard(post string) bool {
	e := r.absent[post]
	switch {
	case e == nil || e.activating:
		return false
	case e.checking:
		e.heard = true
		return false
	default:
		return true
	}
}

// subscribeCreated subscribes ps to the creations channel. A failure is counted, not returned:
// go-redis remembers the channel and subscribes it with the connection it makes next.
func (r *Relay) subscribeCreated(ctx context.Context, ps *redis.PubSub) {
	if err := ps.Subscribe(ctx, r.keys.Created()); err != nil && ctx.Err() == nil {
		r.stats.RedisErrors.Add(1)
	}
}

// handleCreated takes a message of the creations channel. It never blocks.
func (r *Relay) handleCreated(msg any) {
	switch m := msg.(type) {
	case *redis.Message:
		r.stats.Created.Add(1)
		r.mu.Lock()
		waits := r.heard(m.Payload)
		r.mu.Unlock()
		if waits {
			r.queueActivate(m.Payload)
		}
	case *redis.Subscription:
		if m.Kind == "subscribe" {
			// Listening (again): creations announced while the node was not may have been
			// missed, so every waiting post is re-read.
			r.creations.mu.Lock()
			r.creations.recheck = true
			r.creations.mu.Unlock()
			r.creations.wake()
		}
	}
}

func (r *Relay) queueActivate(post string) {
	r.creations.mu.Lock()
	r.creations.pending[post] = struct{}{}
	r.creations.mu.Unlock()
	r.creations.wake()
}

// activateLoop re-reads the waiting posts when asked (and every recheckEvery, when set) and
// subscribes those that came to exist, until ctx is done.
func (r *Relay) activateLoop(ctx context.Context) {
	var every <-chan time.Time
	if r.recheckEvery > 0 {
		t := time.NewTicker(r.recheckEvery)
		defer t.Stop()
		every = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.creations.signal:
		case <-every:
			r.creations.mu.Lock()
			r.creations.recheck = true
			r.creations.mu.Unlock()
		}
		r.creations.mu.Lock()
		recheck := r.creations.recheck
		r.creations.recheck = false
		posts := make([]string, 0, len(r.creations.pending))
		for p := range r.creations.pending {
			posts = append(posts, p)
		}
		clear(r.creations.pending)
		r.creations.mu.Unlock()
		ok := true
		if recheck {
			ok = r.recheck(ctx)
		}
		for len(posts) > 0 && ctx.Err() == nil {
			batch := posts[:min(len(posts), activateBatch)]
			posts = posts[len(batch):]
			ok = r.activate(ctx, batch) && ok
		}
		if !ok { // what failed is queued again; wait before trying
			select {
			case <-ctx.Done():
				return
			case <-time.After(activateRetry):
			}
		}
	}
}

// recheck re-reads the version of every waiting post, recheckBatch per round trip, and takes
// those that exist as created. It reports false, and asks for another re-read, if one failed.
func (r *Relay) recheck(ctx context.Context) bool {
	r.mu.Lock()
	posts := make([]string, 0, len(r.absent))
	for p, e := range r.absent {
		if !e.activating {
			posts = append(posts, p)
		}
	}
	r.mu.Unlock()
	for len(posts) > 0 {
		batch := posts[:min(len(posts), recheckBatch)]
		posts = posts[len(batch):]
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cmds := make([]*redis.StringCmd, len(batch))
		_, _ = r.client.Pipelined(rctx, func(p redis.Pipeliner) error {
			for i, post := range batch {
				cmds[i] = p.Get(rctx, r.keys.Version(post)) // GET: the one read of a version fanout's ACL allows
			}
			return nil
		})
		cancel()
		var err error
		for _, c := range cmds {
			if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
				err = e
				break
			}
		}
		if err != nil {
			r.stats.RedisErrors.Add(1)
			r.creations.mu.Lock()
			r.creations.recheck = true
			r.creations.mu.Unlock()
			r.creations.wake()
			return false
		}
		var found []string
		r.mu.Lock()
		for i, post := range batch {
			if cmds[i].Err() == nil && r.heard(post) {
				found = append(found, post)
			}
		}
		r.mu.Unlock()
		for _, post := range found {
			r.queueActivate(post)
		}
	}
	return true
}

// activate subscribes the channels of posts that came to exist, all at once, and re-reads each
// post once its subscription is live (the resync path), which delivers its first change to the
// sink. A post whose viewers left meanwhile is skipped; one whose subscription failed waits again
// and is queued for another try, and activate reports false.
func (r *Relay) activate(ctx context.Context, batch []string) bool {
	var posts []string
	var entries []*absentPost
	r.mu.Lock()
	for _, p := range batch {
		if e := r.absent[p]; e != nil && !e.activating && !e.checking {
			e.activating, e.done = true, make(chan struct{})
			posts = append(posts, p)
			entries = append(entries, e)
		}
	}
	r.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, activateTimeout)
	defer cancel()
	errs := make([]error, len(posts))
	var wg sync.WaitGroup
	for i, p := range posts {
		wg.Add(1)
		go func() { // exits when Redis confirms, or sctx ends
			defer wg.Done()
			errs[i] = r.subscribeChannel(sctx, p)
		}()
	}
	wg.Wait()
	ok := true
	for i, p := range posts {
		r.mu.Lock()
		e := entries[i]
		e.activating = false
		if errs[i] == nil {
			delete(r.absent, p) // an ordinary subscription from here on
		}
		close(e.done)
		r.mu.Unlock()
		if errs[i] != nil {
			ok = false
			r.queueActivate(p)
			continue
		}
		r.stats.Activated.Add(1)
		r.queueResync(p)
	}
	return ok
}

// Waiting returns how many posts with local viewers the relay keeps off Redis because they do
// not exist yet.
func (r *Relay) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.absent)
}

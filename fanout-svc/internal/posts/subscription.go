package posts

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// subState is where a post's Redis subscription is in its life on this node:
//
//	subscribing -> active <-> idle -> leaving
//	     \-> failed
//
// Only an active or idle subscription hands frames to the post (receives): anything that arrives
// while it is subscribing or leaving belongs to another subscription of the same channel. A post
// is in the registry's map from its creation until it fails, or its UNSUBSCRIBE returns, or a
// successor replaces it while it is leaving: failed and leaving are its last states.
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

// subscription is a post's Redis subscription and the viewers that hold it, under the post's own
// lock, so that viewers of different posts never wait for each other. The registry takes mu
// around the transitions below, which assume it held and are the only writers of state; state is
// also read without it (Receiving), hence atomic.
type subscription struct {
	mu        sync.Mutex
	state     atomic.Uint32      // subState
	refs      int                // viewers holding the post, including viewers in setup
	ready     chan struct{}      // closed when subscribing ends (active, idle or failed)
	err       error              // why it failed; set before ready is closed, read after it
	cancel    context.CancelFunc // cancels the SUBSCRIBE in flight; nil once it ended
	idleSince time.Time          // when it last became idle
	left      chan struct{}      // closed when leaving ends (the UNSUBSCRIBE returned)

	queued bool // in the unsubscriber's queue; guarded by unsubscriber.mu, not by mu
}

// newSubscription starts subscribing for the viewer that creates it, who holds its first
// reference; cancel cancels the SUBSCRIBE.
func newSubscription(cancel context.CancelFunc) subscription {
	return subscription{refs: 1, ready: make(chan struct{}), cancel: cancel}
}

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

// hold takes a reference unless the subscription is leaving or failed, when the post needs a
// successor: left is then the channel the successor waits on (nil for a failed one). A viewer
// returning within the grace period makes the post active again.
func (s *subscription) hold() (ok bool, left <-chan struct{}) {
	switch s.is() {
	case leaving:
		return false, s.left
	case failed:
		return false, nil
	case idle:
		s.set(active)
	}
	s.refs++
	return true, nil
}

// holdReceiving takes a reference only if the subscription is live (active or idle).
func (s *subscription) holdReceiving() bool {
	if !s.receives() {
		return false
	}
	ok, _ := s.hold()
	return ok
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

package posts

import (
	"context"
	"sync/atomic"
	"time"
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
// written under Registry.mu; state is also read without it (Receiving), hence atomic. The transitions
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

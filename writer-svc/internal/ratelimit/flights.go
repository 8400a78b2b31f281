package ratelimit

import (
	"sync"
	"time"
)

// flights coalesces the Allow calls of one key: while a call for a key is in flight, the requests
// for it that come wait behind it, and then go together in one call that counts as many events as
// they are (allowScript), in their order of arrival. A hot key (one address's flood of likes on a
// Cluster, where the like limits cannot ride in the like's own call, or of sessions anywhere)
// then costs Redis one call per round trip, not one per request: the group commit of
// batch.Coalescer, for a bucket. A quiet key's request is sent at once, alone.
type flights struct {
	mu   sync.Mutex
	keys map[string]*flight
}

// flight is a key being asked about, and the group of requests waiting behind its call.
type flight struct{ next *group }

// group is requests that share one call. Its first member sends it once lead is closed; the
// others wait for done.
type group struct {
	n       int           // members; fixed once lead is closed
	lead    chan struct{} // closed when the call before returned: the group's call may leave
	done    chan struct{} // closed when the group's call answered: the fields below are set
	allowed int           // the first allowed members are allowed
	wait    time.Duration // how long the bucket has no room after the call: the others' Retry-After
	err     error
}

// closedLead is the lead of a group that has no call before it.
var closedLead = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// join adds a request for key to the group that sends next and returns the group and the
// request's place in it (0: it sends the group's call).
func (f *flights) join(key string) (*group, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.keys[key]
	if fl == nil {
		f.keys[key] = &flight{}
		return &group{n: 1, lead: closedLead, done: make(chan struct{})}, 0
	}
	if fl.next == nil {
		fl.next = &group{lead: make(chan struct{}), done: make(chan struct{})}
	}
	g := fl.next
	g.n++
	return g, g.n - 1
}

// handOff ends key's call in flight: the group waiting behind it sends next, or, when none
// waits, the key is no longer being asked about.
func (f *flights) handOff(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.keys[key]
	if fl.next == nil {
		delete(f.keys, key)
		return
	}
	g := fl.next
	fl.next = nil // later requests form the group after g
	close(g.lead)
}

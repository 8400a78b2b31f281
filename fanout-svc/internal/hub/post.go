package hub

import (
	"sync/atomic"
	"time"
)

// Post is a post with local viewers (or with viewers arriving): the node holds exactly one Redis
// subscription for it while it exists. Its newest frame is shared by all shards.
type Post struct {
	id     string
	latest atomic.Pointer[frame]

	// Guarded by Hub.mu.
	refs       int
	unsubTimer *time.Timer
	ready      chan struct{} // closed once the subscription is active or failed
	err        error         // set before ready is closed
}

// ID returns the post id.
func (p *Post) ID() string { return p.id }

// offer makes f the post's newest frame unless a frame of the same or a later version is there.
func (p *Post) offer(f *frame) bool {
	for {
		old := p.latest.Load()
		if old != nil && old.u.TS >= f.u.TS {
			return false
		}
		if p.latest.CompareAndSwap(old, f) {
			return true
		}
	}
}

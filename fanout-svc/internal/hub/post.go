package hub

import (
	"sync"
	"sync/atomic"
)

// ringSize is how many recent frames a post keeps for loops that fall behind. A loop that is
// more than ringSize updates behind on a post skips to the newest (conflation); within it, it
// delivers every update, batched.
const ringSize = 64

// Post is a post with local viewers (or with viewers arriving): the node holds exactly one Redis
// subscription for it while it exists. Its recent frames are shared by all loops.
type Post struct {
	id       string
	latest   atomic.Pointer[frame]
	watching atomic.Pointer[watchFrame] // newest watching number (watching.go)

	// known is set once a state read from Redis after the subscription became live (Prime) is
	// in latest. Frames that arrive before that may be stale: a message still in flight on the
	// post's previous subscription, or a resync read before it, can land in latest first.
	known atomic.Bool

	mu   sync.Mutex // guards ring and seq
	ring [ringSize]*frame
	seq  uint64 // frames accepted so far; frame n is ring[n%ringSize]

	subscription // the node's Redis subscription for the post; guarded by Hub.mu
}

// ID returns the post id.
func (p *Post) ID() string { return p.id }

// Known reports whether the node holds a state of the post that no later change escaped: a
// snapshot read after the subscription became live, and every update since. A new viewer of a
// known post needs no Redis read: its first frame is the node's newest.
func (p *Post) Known() bool { return p.known.Load() }

// offer appends f as the post's newest frame unless a frame of the same or a later version is
// there (a delayed or duplicated message).
func (p *Post) offer(f *frame) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.latest.Load(); old != nil && !f.u.Newer(old.u) {
		return false
	}
	p.seq++
	f.seq = p.seq
	p.ring[p.seq%ringSize] = f
	p.latest.Store(f)
	return true
}

// since appends to dst the frames after sequence number seq, oldest first. skipped reports how
// many frames after seq are no longer in the ring.
func (p *Post) since(seq uint64, dst []*frame) (frames []*frame, skipped uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from := seq + 1
	if p.seq >= ringSize && from < p.seq-ringSize+1 {
		skipped = p.seq - ringSize + 1 - from
		from = p.seq - ringSize + 1
	}
	for n := from; n <= p.seq; n++ {
		dst = append(dst, p.ring[n%ringSize])
	}
	return dst, skipped
}

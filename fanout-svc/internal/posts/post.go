package posts

import (
	"sync"
	"sync/atomic"
)

// ringSize is how many recent frames a post keeps for loops that fall behind. A loop that is
// more than ringSize updates behind on a post skips to the newest (conflation); within it, it
// delivers every update, batched.
const ringSize = 64

// Post is a post with local viewers (or with viewers arriving): the node holds exactly one Redis
// subscription for it while it exists. Its recent frames are shared by all the hub's loops.
type Post struct {
	id       string
	latest   atomic.Pointer[Frame]
	watching atomic.Pointer[WatchFrame]

	// known is set once a state read from Redis after the subscription became live (SetKnown) is
	// in latest. Frames that arrive before that may be stale: a message still in flight on the
	// post's previous subscription, or a resync read before it, can land in latest first.
	known atomic.Bool

	mu   sync.Mutex // guards ring and seq
	ring [ringSize]*Frame
	seq  uint64 // frames accepted so far; frame n is ring[n%ringSize]

	sub subscription // the node's Redis subscription for the post, under its own lock
}

// ID returns the post id.
func (p *Post) ID() string { return p.id }

// Known reports whether the node holds a state of the post that no later change escaped: a
// snapshot read after the subscription became live, and every update since. A new viewer of a
// known post needs no Redis read: its first frame is the node's newest.
func (p *Post) Known() bool { return p.known.Load() }

// SetKnown marks the post Known; the caller has just offered a state read from Redis after the
// post's subscription became live.
func (p *Post) SetKnown() { p.known.Store(true) }

// Exists reports whether the node has seen a version of the post: a like or a reaction gave it
// one (rediskeys.Version). A post nobody has liked or reacted to, made up or not yet liked, reads
// as version 0 and does not exist.
func (p *Post) Exists() bool {
	f := p.latest.Load()
	return f != nil && f.Update.TS > 0
}

// Latest returns the post's newest frame, nil before the first.
func (p *Post) Latest() *Frame { return p.latest.Load() }

// Offer appends f as the post's newest frame unless a frame of the same or a later version is
// there (a delayed or duplicated message); it reports whether it did.
func (p *Post) Offer(f *Frame) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.latest.Load(); old != nil && !f.Update.Newer(old.Update) {
		return false
	}
	p.seq++
	f.Seq = p.seq
	p.ring[p.seq%ringSize] = f
	p.latest.Store(f)
	return true
}

// Since appends to dst the frames after sequence number seq, oldest first. skipped reports how
// many frames after seq are no longer in the ring.
func (p *Post) Since(seq uint64, dst []*Frame) (frames []*Frame, skipped uint64) {
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

// Watching returns the post's newest watching frame, nil before the first.
func (p *Post) Watching() *WatchFrame { return p.watching.Load() }

// SwapWatching makes nw the post's newest watching frame if old still is; it reports whether it
// did.
func (p *Post) SwapWatching(old, nw *WatchFrame) bool { return p.watching.CompareAndSwap(old, nw) }

package hub

import (
	"net"

	"github.com/likes/likes/fanout-svc/internal/posts"
)

// viewer is one SSE connection after it left net/http. It is owned by one loop goroutine and
// touched by no other, so it has no lock.
type viewer struct {
	fd    int
	conn  net.Conn // kept so the runtime does not close the descriptor; closed on removal
	multi bool
	links []link // one per post of the stream, at most 64

	// pending is the unwritten rest of the last write; while it is non-empty the socket is full
	// and new updates only set dirty bits. Bounded by one batch of frames.
	pending      []byte
	dirty        uint64 // posts (link bits) whose newest frame is owed once the socket drains
	batchDirty   uint64 // multi-post viewers: posts with frames in the batch being flushed
	blockedSince int64
	lastWrite    int64
	due          int64 // the tick the sweep visits it next (dueList); 0: not filed
	dueIdx       int   // its place in that tick's list
	inBatchList  bool
	doomed       bool
	watching     uint64 // posts (link bits) whose newest watching frame is owed (watching.go)
	onClose      func()
}

// link links a viewer to one of its posts in the loop.
type link struct {
	sp   *loopPost
	idx  int   // position of this viewer in sp.members
	sent int64 // version of the newest frame of this post given to the socket
}

func (v *viewer) blocked() bool { return len(v.pending) > 0 }

// member is one entry of a post's viewer list: the viewer and which of its links the post is.
type member struct {
	v    *viewer
	link int
}

// loopPost is a post as one loop sees it: its local viewers and what was last sent to them.
type loopPost struct {
	post     *posts.Post
	current  *posts.Frame      // the newest frame this loop has processed
	watching *posts.WatchFrame // the newest watching frame this loop has processed
	members  []member
	gone     bool // no viewers left; dropped from the loop

	// Batch: frames of this post not yet flushed to its viewers (the same bytes for every stream
	// kind: ids are versions on all of them).
	inBatch      bool
	batch        []byte
	batchFirstTS int64 // its first frame's ts, for the delivery latency
	batchFirst   int64 // and its version, for what a viewer already has
	batchFrames  int

	// Display rate (display.go) and pacing (pace.go).
	nextAllowed int64
	held        bool
	pace        pacing
}

// MaxPosts is the most posts one viewer may follow: a viewer's owed posts are bits of one uint64.
// The registry refuses to acquire more for one viewer.
const MaxPosts = posts.MaxPosts

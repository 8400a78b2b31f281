package hub

import (
	"net"
)

// viewer is one SSE connection after it left net/http. It is owned by one shard goroutine and
// touched by no other, so it has no lock.
type viewer struct {
	fd    int
	conn  net.Conn // kept so the runtime does not close the descriptor; closed on removal
	multi bool
	slots []slot // one per post of the stream, at most 64

	// pending is the unwritten rest of the last write; while it is non-empty the socket is full
	// and new updates only set dirty bits. Bounded by one batch of frames.
	pending      []byte
	dirty        uint64 // posts (slot bits) whose newest frame is owed once the socket drains
	batchDirty   uint64 // multi-post viewers: posts with frames in the batch being flushed
	blockedSince int64
	lastWrite    int64
	inBatchList  bool
	doomed       bool
	watching     uint64 // posts (slot bits) whose newest watching frame is owed (watching.go)
	onClose      func()
}

// slot links a viewer to one of its posts in the shard.
type slot struct {
	sp   *shardPost
	idx  int   // position of this viewer in sp.members
	sent int64 // version of the newest frame of this post given to the socket
}

func (v *viewer) blocked() bool { return len(v.pending) > 0 }

// member is one entry of a post's viewer list: the viewer and which of its slots the post is.
type member struct {
	v    *viewer
	slot int
}

// shardPost is a post as one shard sees it: its local viewers and what was last sent to them.
type shardPost struct {
	post     *Post
	current  *frame      // the newest frame this shard has processed
	watching *watchFrame // the newest watching frame this shard has processed
	members  []member
	gone     bool // no viewers left; dropped from the shard

	// Batch: frames of this post not yet flushed to its viewers (the same bytes for every stream
	// kind: ids are versions on all of them).
	inBatch      bool
	batch        []byte
	batchFirstTS int64
	batchFrames  int

	// Display rate (display.go) and pacing (pace.go).
	nextAllowed int64
	held        bool
	pace        pacing
}

// MaxPosts is the most posts one viewer may follow: a viewer's owed posts are bits of one uint64.
const MaxPosts = 64

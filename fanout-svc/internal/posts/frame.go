package posts

import (
	"strconv"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// Frame is one update encoded once for every viewer. Its event id is the post version on every
// stream, a microsecond watermark that lets a reconnecting viewer resume: a single-post stream
// used the count until reactions, which change a post without changing it. A post with reactions
// gets its reactions event right after the count event, without an id of its own (a browser keeps
// the last id it saw), so that one frame is the post's whole state and a slow viewer who gets only
// the newest frame misses nothing.
type Frame struct {
	Update  update.Update
	Version int64  // Update.Version(), what viewers' resume points and the hub's order compare
	Seq     uint64 // position in the post's sequence of frames
	Bytes   []byte // what every viewer of the post receives, single- and multi-post streams alike
}

// NewFrame encodes u.
func NewFrame(u update.Update) *Frame {
	b := AppendFrame(make([]byte, 0, 112+2*len(u.Reactions)), u)
	return &Frame{Update: u, Version: u.Version(), Bytes: b[:len(b):len(b)]}
}

// AppendFrame appends u's events: the count event with the version (update.Update.Version: the ts
// until the first failover, then the epoch above it) as its id, and the reactions event when the
// post has reactions.
func AppendFrame(dst []byte, u update.Update) []byte {
	var idBuf [20]byte
	var dataBuf [128]byte
	data := u.AppendCount(dataBuf[:0])
	dst = sse.AppendEvent(dst, strconv.AppendInt(idBuf[:0], u.Version(), 10), sse.EventCount, data)
	if u.Reactions != "" {
		dst = sse.AppendEvent(dst, nil, sse.EventReactions, u.AppendReactions(data[:0]))
	}
	return dst
}

// WatchFrame is one watching number of a post as viewers are shown it (rounded by the hub),
// encoded once for every viewer, with no id: it must never move a stream's Last-Event-ID.
type WatchFrame struct {
	N, TS int64 // the shown number; the start of the interval it was counted in
	Bytes []byte
}

// NewWatchFrame encodes w.
func NewWatchFrame(w update.Watching) *WatchFrame {
	var data [96]byte
	b := sse.AppendWatching(make([]byte, 0, 112), w.AppendJSON(data[:0]))
	return &WatchFrame{N: w.Watching, TS: w.TS, Bytes: b[:len(b):len(b)]}
}

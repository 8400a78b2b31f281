package hub

import (
	"strconv"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// frame is one update encoded once for every viewer. Its event id is the post version on every
// stream, a microsecond watermark that lets a reconnecting viewer resume (stream/request.go): a
// single-post stream used the count until reactions, which change a post without changing it.
// A post with reactions gets its reactions event right after the count event, without an id of
// its own (a browser keeps the last id it saw), so that one frame is the post's whole state and
// a slow viewer who gets only the newest frame misses nothing.
type frame struct {
	u     update.Update
	seq   uint64 // position in the post's sequence of frames
	bytes []byte // what every viewer of the post receives, single- and multi-post streams alike
}

func newFrame(u update.Update) *frame {
	b := appendFrame(make([]byte, 0, 112+2*len(u.Reactions)), u)
	return &frame{u: u, bytes: b[:len(b):len(b)]}
}

// appendFrame appends u's events: the count event with the version as its id, and the reactions
// event when the post has reactions.
func appendFrame(dst []byte, u update.Update) []byte {
	var idBuf [20]byte
	var dataBuf [128]byte
	data := u.AppendCount(dataBuf[:0])
	dst = sse.AppendEvent(dst, strconv.AppendInt(idBuf[:0], u.TS, 10), sse.EventCount, data)
	if u.Reactions != "" {
		dst = sse.AppendEvent(dst, nil, sse.EventReactions, u.AppendReactions(data[:0]))
	}
	return dst
}

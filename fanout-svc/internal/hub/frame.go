package hub

import (
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// frame is one update encoded once for every viewer. A single-post stream uses the count as the
// event id (what a browser sends back as Last-Event-ID); a multi-post stream uses the post version,
// a microsecond watermark that lets a reconnecting viewer resume across all its posts.
type frame struct {
	u      update.Update
	seq    uint64 // position in the post's sequence of frames
	single []byte
	multi  []byte
}

func newFrame(u update.Update) *frame {
	data := u.AppendJSON(make([]byte, 0, 64))
	f := &frame{u: u}
	buf := make([]byte, 0, 2*(len(data)+48))
	buf = sse.AppendEvent(buf, sse.AppendIntID(make([]byte, 0, 20), u.Count), sse.EventCount, data)
	f.single = buf[:len(buf):len(buf)]
	start := len(buf)
	buf = sse.AppendEvent(buf, sse.AppendIntID(make([]byte, 0, 20), u.TS), sse.EventCount, data)
	f.multi = buf[start:]
	return f
}

// bytesFor returns the frame form a viewer of the given kind receives.
func (f *frame) bytesFor(multi bool) []byte {
	if multi {
		return f.multi
	}
	return f.single
}

package update

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Watching is how many viewers, on all fanout nodes together, follow a post. It is sent as an
// `event: watching` with no id, so it never moves a stream's Last-Event-ID.
type Watching struct {
	PostID   string `json:"post_id"`
	Watching int64  `json:"watching"`
	// TS is the start of the interval the number was counted in, in unix microseconds: the same
	// on every node, and increasing from one interval to the next.
	TS int64 `json:"ts"`
}

var infixWatching = []byte(`","watching":`)

// AppendJSON appends w's wire form, {"post_id":"42","watching":12345,"ts":1700000000000000}.
// Post ids need no JSON escaping (package ids).
func (w Watching) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"post_id":"`...)
	dst = append(dst, w.PostID...)
	dst = append(dst, `","watching":`...)
	dst = strconv.AppendInt(dst, w.Watching, 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, w.TS, 10)
	return append(dst, '}')
}

// ParseWatching decodes a watching payload: the exact form AppendJSON writes without allocating
// beyond the post id, anything else through encoding/json.
func ParseWatching(b []byte) (Watching, error) {
	if post, n, ts, ok := splitWatching(b); ok {
		return Watching{PostID: string(post), Watching: n, TS: ts}, nil
	}
	var w Watching
	if err := json.Unmarshal(b, &w); err != nil || w.PostID == "" {
		return Watching{}, ErrMalformed
	}
	return w, nil
}

// SplitWatching is ParseWatching for callers that look the post up themselves (a load
// generator): post aliases b, and nothing is allocated. Only the form AppendJSON writes is read.
func SplitWatching(b []byte) (post []byte, watching, ts int64, err error) {
	post, watching, ts, ok := splitWatching(b)
	if !ok {
		return nil, 0, 0, ErrMalformed
	}
	return post, watching, ts, nil
}

func splitWatching(b []byte) (post []byte, n, ts int64, ok bool) {
	rest, ok := bytes.CutPrefix(b, prefixPost)
	if !ok {
		return nil, 0, 0, false
	}
	i := bytes.IndexByte(rest, '"')
	if i <= 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return nil, 0, 0, false
	}
	post, rest = rest[:i], rest[i:]
	if rest, ok = bytes.CutPrefix(rest, infixWatching); !ok {
		return nil, 0, 0, false
	}
	if n, rest, ok = parseInt(rest); !ok {
		return nil, 0, 0, false
	}
	if ts, ok = parseTSEnd(rest); !ok {
		return nil, 0, 0, false
	}
	return post, n, ts, true
}

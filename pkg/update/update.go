// Package update is the message that travels from the writer, through Redis pub/sub, to every
// viewer: the same JSON bytes are the pub/sub payload and the SSE `data:` line, so a fanout node
// never re-encodes what the writer published.
package update

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Update is one post's new state.
type Update struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
	// TS is the post's change version: strictly increasing per post and equal (to within the
	// microseconds that separate two changes in one tick) to the Redis clock in unix
	// microseconds when the change was stored. It orders a post's updates and measures latency.
	TS int64 `json:"ts"`
}

// ErrMalformed is returned by Parse for anything that is not an update.
var ErrMalformed = errors.New("malformed update")

// AppendJSON appends u's wire form, {"post_id":"42","count":123,"ts":1700000000000000}. Post ids
// are validated to need no JSON escaping (package ids), so none is done here.
func (u Update) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"post_id":"`...)
	dst = append(dst, u.PostID...)
	dst = append(dst, `","count":`...)
	dst = strconv.AppendInt(dst, u.Count, 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, u.TS, 10)
	return append(dst, '}')
}

// Newer reports whether u supersedes old (a later version of the same post).
func (u Update) Newer(old Update) bool { return u.TS > old.TS }

var (
	prefixPost = []byte(`{"post_id":"`)
	infixCount = []byte(`","count":`)
	infixTS    = []byte(`,"ts":`)
)

// Parse decodes an update. The exact form AppendJSON writes (and the writer's script publishes)
// is parsed without allocating beyond the post id; anything else goes through encoding/json.
func Parse(b []byte) (Update, error) {
	if u, ok := parseFast(b); ok {
		return u, nil
	}
	var u Update
	if err := json.Unmarshal(b, &u); err != nil || u.PostID == "" {
		return Update{}, ErrMalformed
	}
	return u, nil
}

// ParseCount is Parse for callers that need only the numbers of a post they already know, such as
// a load generator reading thousands of events per second: it never allocates.
func ParseCount(b []byte) (count, ts int64, err error) {
	_, count, ts, err = SplitCount(b)
	return count, ts, err
}

// SplitCount is ParseCount for a reader of several posts: it also returns the post id, which
// aliases b. It never allocates.
func SplitCount(b []byte) (post []byte, count, ts int64, err error) {
	rest, ok := bytes.CutPrefix(b, prefixPost)
	if !ok {
		return nil, 0, 0, ErrMalformed
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return nil, 0, 0, ErrMalformed
	}
	count, ts, ok = parseNumbers(rest[i:])
	if !ok {
		return nil, 0, 0, ErrMalformed
	}
	return rest[:i], count, ts, nil
}

func parseFast(b []byte) (Update, bool) {
	rest, ok := bytes.CutPrefix(b, prefixPost)
	if !ok {
		return Update{}, false
	}
	i := bytes.IndexByte(rest, '"')
	if i <= 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return Update{}, false
	}
	count, ts, ok := parseNumbers(rest[i:])
	if !ok {
		return Update{}, false
	}
	return Update{PostID: string(rest[:i]), Count: count, TS: ts}, true
}

// parseNumbers parses `","count":N,"ts":M}` exactly.
func parseNumbers(b []byte) (count, ts int64, ok bool) {
	rest, ok := bytes.CutPrefix(b, infixCount)
	if !ok {
		return 0, 0, false
	}
	count, rest, ok = parseInt(rest)
	if !ok {
		return 0, 0, false
	}
	rest, ok = bytes.CutPrefix(rest, infixTS)
	if !ok {
		return 0, 0, false
	}
	ts, rest, ok = parseInt(rest)
	if !ok || len(rest) != 1 || rest[0] != '}' {
		return 0, 0, false
	}
	return count, ts, true
}

func parseInt(b []byte) (int64, []byte, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i >= 18 {
			return 0, nil, false
		}
		n = n*10 + int64(b[i]-'0')
	}
	if i == 0 {
		return 0, nil, false
	}
	if neg {
		n = -n
	}
	return n, b[i:], true
}

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
	// Epoch counts the primary changes of the post's Redis before the change was read or stored
	// (package epoch): 0 until the first failover, and omitted from the wire while it is 0. A
	// failover may discard changes the old primary made, and with them versions its successor never
	// reaches again; the epoch orders the successor's states after them (Version).
	Epoch int64 `json:"epoch,omitempty"`
	// Reactions is the post's reaction counts as one JSON object of kind to count, in the
	// writer's form ({"clap":12,"heart":3}, kinds in byte order), or nil for a post without
	// reactions. It is kept as the bytes the writer published, never decoded: a fanout node only
	// forwards it, and a new kind needs no new field anywhere. A string, not bytes, so that an
	// Update stays comparable and immutable once parsed.
	Reactions string `json:"-"`
}

// wire is an update as encoding/json reads it, for the forms Parse has no fast path for.
type wire struct {
	PostID    string          `json:"post_id"`
	Count     int64           `json:"count"`
	TS        int64           `json:"ts"`
	Epoch     int64           `json:"epoch"`
	Reactions json.RawMessage `json:"reactions"`
}

// ErrMalformed is returned by Parse for anything that is not an update.
var ErrMalformed = errors.New("malformed update")

// AppendJSON appends u's wire form, what the writer publishes:
// {"post_id":"42","count":123,"ts":1700000000000000}, with ,"epoch":2 after the ts once the
// epoch is not 0, and, for a post with reactions, ,"reactions":{"clap":12} before the closing
// brace. Post ids are validated to need no JSON
// escaping (package ids), so none is done here.
func (u Update) AppendJSON(dst []byte) []byte {
	dst = u.appendCount(dst)
	if len(u.Reactions) > 0 {
		dst = append(dst, infixReactions...)
		dst = append(dst, u.Reactions...)
	}
	return append(dst, '}')
}

// AppendCount appends the count event's data, {"post_id":"42","count":123,"ts":1700000000000000},
// the wire form without reactions: a client that knows only likes reads the same event as before
// reactions existed.
func (u Update) AppendCount(dst []byte) []byte { return append(u.appendCount(dst), '}') }

// AppendReactions appends the reactions event's data,
// {"post_id":"42","counts":{"clap":12},"ts":1700000000000000}, with {} for a post without any.
func (u Update) AppendReactions(dst []byte) []byte {
	dst = append(dst, prefixPost...)
	dst = append(dst, u.PostID...)
	dst = append(dst, `","counts":`...)
	if len(u.Reactions) > 0 {
		dst = append(dst, u.Reactions...)
	} else {
		dst = append(dst, "{}"...)
	}
	dst = append(dst, infixTS...)
	dst = strconv.AppendInt(dst, u.TS, 10)
	return append(u.appendEpoch(dst), '}')
}

func (u Update) appendCount(dst []byte) []byte {
	dst = append(dst, prefixPost...)
	dst = append(dst, u.PostID...)
	dst = append(dst, infixCount...)
	dst = strconv.AppendInt(dst, u.Count, 10)
	dst = append(dst, infixTS...)
	return u.appendEpoch(strconv.AppendInt(dst, u.TS, 10))
}

func (u Update) appendEpoch(dst []byte) []byte {
	if u.Epoch == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, infixEpoch...), u.Epoch, 10)
}

// Newer reports whether u supersedes old (a later version of the same post).
func (u Update) Newer(old Update) bool { return u.Version() > old.Version() }

// Version orders a post's states across failovers: its epoch, then its ts, in one number, which
// is also a stream's event id. The ts takes the low TSBits bits (microseconds until the year
// 2112), the epoch the bits above (saturated at MaxEpoch), so that with epoch 0 the version is
// the ts itself: ids and resumes from before epochs read the same.
func (u Update) Version() int64 { return Version(u.Epoch, u.TS) }

// TSBits and MaxEpoch lay out Version.
const (
	TSBits   = 52
	MaxEpoch = 1<<(63-TSBits) - 1
)

// Version is Update.Version of a state with epoch e and ts ts.
func Version(e, ts int64) int64 {
	return min(max(e, 0), MaxEpoch)<<TSBits | ts&(1<<TSBits-1)
}

var (
	prefixPost     = []byte(`{"post_id":"`)
	infixCount     = []byte(`","count":`)
	infixTS        = []byte(`,"ts":`)
	infixEpoch     = []byte(`,"epoch":`)
	infixReactions = []byte(`,"reactions":`)
)

// Parse decodes an update. The exact form AppendJSON writes (and the writer's script publishes)
// is parsed without allocating beyond the post id (and a copy of the reactions, when there are
// any); anything else goes through encoding/json. Reactions that are not one line of a JSON
// object are malformed: they go into an SSE data line as they are.
func Parse(b []byte) (Update, error) {
	if u, ok := parseFast(b); ok {
		return u, nil
	}
	var w wire
	if err := json.Unmarshal(b, &w); err != nil || w.PostID == "" {
		return Update{}, ErrMalformed
	}
	u := Update{PostID: w.PostID, Count: w.Count, TS: w.TS, Epoch: w.Epoch}
	if len(w.Reactions) > 0 && string(w.Reactions) != "null" {
		var buf bytes.Buffer
		if w.Reactions[0] != '{' || json.Compact(&buf, w.Reactions) != nil {
			return Update{}, ErrMalformed
		}
		if buf.String() != "{}" {
			u.Reactions = buf.String()
		}
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
	count, ts, epoch, rx, ok := parseTail(rest[i:])
	if !ok {
		return Update{}, false
	}
	u := Update{PostID: string(rest[:i]), Count: count, TS: ts, Epoch: epoch}
	if len(rx) > 0 {
		u.Reactions = string(rx)
	}
	return u, true
}

// parseTail parses `","count":N,"ts":M}` exactly, with `,"epoch":E` after M or not, and
// `,"reactions":{...}` before the closing brace or not: an object of one line (not otherwise
// checked: the writer's script writes it), which it returns aliasing b.
func parseTail(b []byte) (count, ts, epoch int64, reactions []byte, ok bool) {
	count, ts, epoch, rest, ok := parseHead(b)
	switch {
	case !ok:
		return 0, 0, 0, nil, false
	case len(rest) == 1 && rest[0] == '}':
		return count, ts, epoch, nil, true
	}
	rx, ok := bytes.CutPrefix(rest, infixReactions)
	if !ok || len(rx) < 3 || rx[0] != '{' || rx[len(rx)-2] != '}' || rx[len(rx)-1] != '}' ||
		bytes.ContainsAny(rx, "\r\n") {
		return 0, 0, 0, nil, false
	}
	if rx = rx[:len(rx)-1]; len(rx) == 2 { // {}
		rx = nil
	}
	return count, ts, epoch, rx, true
}

// parseHead parses `","count":N,"ts":M` and `,"epoch":E` if it follows, and returns the rest.
func parseHead(b []byte) (count, ts, epoch int64, rest []byte, ok bool) {
	rest, ok = bytes.CutPrefix(b, infixCount)
	if !ok {
		return 0, 0, 0, nil, false
	}
	count, rest, ok = parseInt(rest)
	if !ok {
		return 0, 0, 0, nil, false
	}
	rest, ok = bytes.CutPrefix(rest, infixTS)
	if !ok {
		return 0, 0, 0, nil, false
	}
	if ts, rest, ok = parseInt(rest); !ok {
		return 0, 0, 0, nil, false
	}
	if e, found := bytes.CutPrefix(rest, infixEpoch); found {
		if epoch, rest, ok = parseInt(e); !ok {
			return 0, 0, 0, nil, false
		}
	}
	return count, ts, epoch, rest, true
}

// parseNumbers parses `","count":N,"ts":M}` exactly, with `,"epoch":E` after M or not: its
// readers measure latency from the ts, which the epoch does not change.
func parseNumbers(b []byte) (count, ts int64, ok bool) {
	count, ts, _, rest, ok := parseHead(b)
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

var infixCounts = []byte(`","counts":{`)

// SplitReactions reads a reactions event's data, the form AppendReactions writes,
// {"post_id":"42","counts":{"clap":12,"heart":3},"ts":1700000000000000}, for a reader that needs
// only the sum of its counts (a load generator checks that a viewer reached the stored totals):
// post aliases b, and nothing is allocated.
func SplitReactions(b []byte) (post []byte, total, ts int64, err error) {
	rest, ok := bytes.CutPrefix(b, prefixPost)
	if !ok {
		return nil, 0, 0, ErrMalformed
	}
	i := bytes.IndexByte(rest, '"')
	if i <= 0 {
		return nil, 0, 0, ErrMalformed
	}
	post, rest = rest[:i], rest[i:]
	if rest, ok = bytes.CutPrefix(rest, infixCounts); !ok {
		return nil, 0, 0, ErrMalformed
	}
	for len(rest) > 0 && rest[0] != '}' {
		// "kind":N, with kinds validated to need no escaping (package ids).
		if rest[0] != '"' {
			return nil, 0, 0, ErrMalformed
		}
		j := bytes.IndexByte(rest[1:], '"')
		if j < 0 || len(rest) < j+3 || rest[j+2] != ':' {
			return nil, 0, 0, ErrMalformed
		}
		var n int64
		if n, rest, ok = parseInt(rest[j+3:]); !ok || n < 0 {
			return nil, 0, 0, ErrMalformed
		}
		total += n
		if len(rest) > 0 && rest[0] == ',' {
			rest = rest[1:]
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte{'}'}); !ok {
		return nil, 0, 0, ErrMalformed
	}
	if ts, ok = parseTSEnd(rest); !ok {
		return nil, 0, 0, ErrMalformed
	}
	return post, total, ts, nil
}

// parseTSEnd parses `,"ts":M}` exactly: the end of every event's data.
func parseTSEnd(b []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(b, infixTS)
	if !ok {
		return 0, false
	}
	ts, rest, ok := parseInt(rest)
	return ts, ok && len(rest) == 1 && rest[0] == '}'
}

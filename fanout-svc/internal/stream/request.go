package stream

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/likes/likes/pkg/ids"
)

// MaxQueryBytes bounds the query string of a stream request.
const MaxQueryBytes = 8 << 10

// Errors a client can cause; their text is the JSON error it receives.
var (
	errNoPosts    = errors.New("no posts: use /sse/{postID} or /sse?posts=a,b,c")
	errQueryLarge = errors.New("query string too long")
)

// parsePosts reads a stream's post list by the rules the writer's reads share (pkg/ids).
func parsePosts(list string, max int) ([]string, error) {
	if list == "" {
		return nil, errNoPosts
	}
	return ids.ParsePostList(list, max)
}

// lastEventID reads the id a reconnecting client resumes from: the Last-Event-ID header that
// EventSource sends, or a lastEventId query parameter (for clients that cannot set headers).
// Ids here are non-negative integers; anything else is treated as no id, so a garbled header
// costs the client a full snapshot, never an error.
func lastEventID(r *http.Request) (int64, bool) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" && r.URL.RawQuery != "" { // most streams have no query: spare parsing an empty one
		v = r.URL.Query().Get("lastEventId")
	}
	return parseEventID(v)
}

func parseEventID(v string) (int64, bool) {
	if v == "" || len(v) > 19 {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

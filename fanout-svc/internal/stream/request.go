package stream

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/update"
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

// streamRequest is what a stream request asks for, read by the same rules whichever entry point
// (net/http's router or the fast accept loop, fast.go) took its head.
type streamRequest struct {
	posts    []string
	multi    bool
	resuming bool
	after    int64 // resuming: the version the client has, from its last event's id
}

// resume reports, for the hub, whether post i's state is news to the client; nil: all is news.
func (r streamRequest) resume() func(int, update.Update) bool {
	if !r.resuming {
		return nil
	}
	after := r.after
	return func(_ int, u update.Update) bool { return u.Version() > after }
}

// singleRequest reads GET /sse/{post}: the post from the path, the resume id from the
// Last-Event-ID header (lastID) or the query.
func singleRequest(post, rawQuery, lastID string) (streamRequest, error) {
	if err := ids.ValidPostID(post); err != nil {
		return streamRequest{}, err
	}
	req := streamRequest{posts: []string{post}}
	if last, ok := lastEventID(lastID, rawQuery); ok && last >= minVersionID {
		req.resuming, req.after = true, last
	}
	return req, nil
}

// minVersionID tells the two forms of a single-post stream's id apart. The id is the post's
// version (update.Update.Version: its updates' ts, Redis microseconds, about 1.8e15 in 2026 and
// never less once a post has changed, with the epoch above it after a failover); before reactions it was the like count, which a post would need 10^15 likes to
// reach. A resume with a count (an EventSource that connected before the change) cannot tell
// whether the reactions moved since, so it gets the full snapshot, like a first connect.
const minVersionID = 1_000_000_000_000_000

// multiRequest reads GET /sse?posts=a,b,c: the posts and resume id from the query, as
// URL.Query() parses it (malformed pairs are skipped), the header's id first.
func multiRequest(rawQuery, lastID string, maxPosts int) (streamRequest, error) {
	if len(rawQuery) > MaxQueryBytes {
		return streamRequest{}, errQueryLarge
	}
	q, _ := url.ParseQuery(rawQuery)
	posts, err := parsePosts(q.Get("posts"), maxPosts)
	if err != nil {
		return streamRequest{}, err
	}
	req := streamRequest{posts: posts, multi: true}
	if lastID == "" {
		lastID = q.Get("lastEventId")
	}
	if last, ok := parseEventID(lastID); ok {
		req.resuming, req.after = true, last
	}
	return req, nil
}

// lastEventID reads the id a reconnecting client resumes from: the Last-Event-ID header that
// EventSource sends, or a lastEventId query parameter (for clients that cannot set headers).
// Ids here are non-negative integers; anything else is treated as no id, so a garbled header
// costs the client a full snapshot, never an error.
func lastEventID(header, rawQuery string) (int64, bool) {
	v := header
	if v == "" && rawQuery != "" { // most streams have no query: spare parsing an empty one
		q, _ := url.ParseQuery(rawQuery)
		v = q.Get("lastEventId")
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

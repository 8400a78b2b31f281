package likeapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/writer-svc/internal/userlikes"
)

// readPost is one entry of a GET /likes reply.
type readPost struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
	Liked  bool   `json:"liked"`
	TS     int64  `json:"ts"`
	// Epoch is the epoch of the primary read (0 until its first failover, and then left out):
	// clients order a post's states by epoch, then ts (update.Update.Version).
	Epoch int64 `json:"epoch,omitempty"`
	// Reactions is the count of each kind the post has had ({} for none), kinds in byte order.
	Reactions map[string]int64 `json:"reactions"`
}

// countPost is one entry of a GET /counts reply: no user, no liked.
type countPost struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
	TS     int64  `json:"ts"`
	Epoch  int64  `json:"epoch,omitempty"` // as in readPost
	// Reactions is as in readPost.
	Reactions map[string]int64 `json:"reactions"`
}

type readReply[T any] struct {
	Posts []T `json:"posts"`
}

// ReadRoutes mounts the batch reads on r: GET /likes?posts=a,b,c for the identified user (the
// same identity as a like: X-User-ID, or the bearer token when auth is on) and GET
// /counts?posts=a,b,c with no identity. Both answer in the order asked, repeats dropped, with each
// post's version as ts, so a client can order the reply against the stream's events.
func (h *Handler) ReadRoutes(r chi.Router) {
	r.Get("/likes", func(w http.ResponseWriter, r *http.Request) {
		h.read(w, r, true)
	})
	r.Get("/counts", func(w http.ResponseWriter, r *http.Request) {
		h.read(w, r, false)
	})
}

// read validates the post list first (it costs nothing), then spends the client address's read
// budget, then identifies the user when asked to, then reads everything in one pipeline. Every
// failure goes through fail, as a like's does.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, identified bool) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	posts, err := ids.ParsePostList(postsParam(r), h.reader.MaxPosts())
	if err == nil {
		err = h.allowRead(r)
	}
	var user string
	if err == nil && identified {
		user, err = h.identify.UserID(r)
	}
	var states []userlikes.PostState
	if err == nil {
		states, err = h.reader.Read(ctx, posts, user)
	}
	if err == nil {
		err = h.store.ConfirmRead(ctx, posts...)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.outage.ok()
	if identified {
		out := readReply[readPost]{Posts: make([]readPost, len(states))}
		for i, s := range states {
			out.Posts[i] = readPost{PostID: s.PostID, Count: s.Count, Liked: s.Liked, TS: s.Version, Epoch: s.Epoch, Reactions: s.Reactions}
		}
		serve.JSON(w, http.StatusOK, out)
		return
	}
	out := readReply[countPost]{Posts: make([]countPost, len(states))}
	for i, s := range states {
		out.Posts[i] = countPost{PostID: s.PostID, Count: s.Count, TS: s.Version, Epoch: s.Epoch, Reactions: s.Reactions}
	}
	serve.JSON(w, http.StatusOK, out)
}

// allowRead spends one token of the client address's budget for reads of counts (nil limit:
// none); a refusal is a 429 with Retry-After, before any of the request's Redis work. The limit is
// kept in this process (ratelimit.Local), not in Redis: a read of counts must not write to Redis
// on demand, and a shared bucket is a write per allowed read.
func (h *Handler) allowRead(r *http.Request) error {
	if h.readAddr == nil {
		return nil
	}
	return limit(r.Context(), h.readAddr, clientip.Source(h.clients.Addr(r)), limitedError{read: true, perAddr: true})
}

// postsParam returns the posts parameter; several (posts=a&posts=b, as some clients send a list)
// are joined, so they count together against the cap.
func postsParam(r *http.Request) string {
	return strings.Join(r.URL.Query()["posts"], ",")
}

package likeapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/writerapi"
	"github.com/likes/likes/writer-svc/internal/auth"
	"github.com/likes/likes/writer-svc/internal/batch"
	"github.com/likes/likes/writer-svc/internal/ratelimit"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/userlikes"
)

const (
	opLike   = "like"
	opUnlike = "unlike"
)

// Limiter decides whether a user (or a client address) may like now; a positive duration is how
// long to wait.
type Limiter interface {
	Allow(ctx context.Context, user string) (time.Duration, error)
}

// Handler serves the like API.
type Handler struct {
	store    *store.Store
	changes  *batch.Coalescer
	identify auth.Identifier
	limit    Limiter
	perPost  bool
	addrs    Limiter
	newPosts *newPosts // nil: new posts unlimited
	dataAddr Limiter   // nil: user data reads and erasures unlimited
	readAddr Limiter   // nil: reads of counts unlimited
	clients  clientip.Resolver
	metrics  *Metrics
	outage   *outage // logs storage failures once per outage
	timeout  time.Duration
	index    *userlikes.Index
	reader   *userlikes.Reader
	admin    Authorizer
	erase    time.Duration
	kinds    map[string]bool // the reaction kinds taken
	kindList string          // the same, for the error of any other
}

// Authorizer decides whether a request may use the admin API (auth.Admin).
type Authorizer interface {
	Authorize(r *http.Request) error
}

// Options are a Handler's dependencies. Limit and AddrLimit may be nil (no such limit).
type Options struct {
	Store    *store.Store     // counts
	Changes  *batch.Coalescer // likes, unlikes and reactions, batched per post
	Identify auth.Identifier
	Limit    Limiter // per user
	// LimitPerPost makes Limit count per user and post: user:post (a user id has no colon).
	LimitPerPost bool
	// AddrLimit is per client address, as Clients tells it (X-Forwarded-For from trusted proxies
	// only): it bounds what many fresh users behind one address can write together.
	AddrLimit Limiter
	Clients   clientip.Resolver
	Metrics   *Metrics
	Log       *zap.Logger
	// NewPostLimit (per user) and NewPostAddrLimit (per client address) bound the posts brought
	// into existence with likes and reactions (newPosts); either may be nil.
	NewPostLimit     Limiter
	NewPostAddrLimit Limiter
	// DataAddrLimit (per client address; nil: none) bounds the reads and erasures of user data:
	// a post's likers, a user's likes and their erasure, each several Redis calls.
	DataAddrLimit Limiter
	// ReadAddrLimit (per client address; nil: none) bounds the reads of counts (GET /count,
	// /counts, /likes): each is a read and, with replicas to confirm, a share of a barrier.
	ReadAddrLimit Limiter
	// Timeout bounds each request's work, Redis included; past it the client gets a 503.
	Timeout time.Duration
	// Index serves and erases a user's likes (UserRoutes); Admin authorizes the admin form.
	Index *userlikes.Index
	// Reader serves the batch reads (ReadRoutes) and a post's likers (UserRoutes).
	Reader *userlikes.Reader
	Admin  Authorizer
	// EraseTimeout bounds one erasure of a user's likes (DELETE /me/likes), which unlikes every
	// post the user liked; past it the client gets a 503 and a retry goes on where it stopped.
	EraseTimeout time.Duration
	// ReactionKinds are the kinds POST /react/{postID}/{kind} takes (validated like post ids).
	ReactionKinds []string
}

// NewHandler returns a Handler.
func NewHandler(o Options) *Handler {
	kinds := make(map[string]bool, len(o.ReactionKinds))
	for _, k := range o.ReactionKinds {
		kinds[k] = true
	}
	return &Handler{store: o.Store, changes: o.Changes, identify: o.Identify, limit: o.Limit, perPost: o.LimitPerPost, addrs: o.AddrLimit,
		newPosts: newNewPosts(o.NewPostLimit, o.NewPostAddrLimit), dataAddr: o.DataAddrLimit, readAddr: o.ReadAddrLimit,
		clients: o.Clients, metrics: o.Metrics, outage: &outage{log: o.Log}, timeout: o.Timeout,
		index: o.Index, reader: o.Reader, admin: o.Admin, erase: max(o.EraseTimeout, o.Timeout),
		kinds: kinds, kindList: strings.Join(o.ReactionKinds, ",")}
}

// Routes mounts the like API on r.
func (h *Handler) Routes(r chi.Router) {
	r.Post("/like/{postID}", h.like)
	r.Delete("/like/{postID}", h.unlike)
	r.Post("/react/{postID}/{kind}", h.react)
	r.Get("/count/{postID}", h.count)
}

type countReply struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
}

func (h *Handler) like(w http.ResponseWriter, r *http.Request)   { h.change(w, r, opLike) }
func (h *Handler) unlike(w http.ResponseWriter, r *http.Request) { h.change(w, r, opUnlike) }

// change runs a like or an unlike. "liked" in the reply says whether this request added the
// like: false for a repeated like and always for an unlike.
func (h *Handler) change(w http.ResponseWriter, r *http.Request, op string) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	post, user, err := h.parse(r)
	var res store.Result
	if err == nil {
		res, err = h.apply(r, op, post, user)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.outage.ok()
	h.newPosts.exists(post)
	h.metrics.record(op, res)
	serve.RawJSON(w, http.StatusOK, writerapi.AppendLikeReply(make([]byte, 0, 64), post, res.Count, op == opLike && res.Changed))
}

// apply stores the change. Likes and unlikes both pass the client address's limit: an unlike of a
// post not liked changes nothing but still costs a script call, so a flood of them must be bounded
// like one of likes. Only likes then pass the user's own limit (like/unlike churn by one user is
// bounded by it: an unlike needs a like before it to change anything). On one Redis both limits
// are spent in the change's own script call (the store's limits.go); a key refused lately is
// refused here before any call.
func (h *Handler) apply(r *http.Request, op, post, user string) (store.Result, error) {
	ctx := r.Context()
	ch := store.Change{User: user, Unlike: op == opUnlike}
	var err error
	if h.addrs != nil {
		ch.Limits[0], err = h.spend(ctx, h.addrs, clientip.Source(h.clients.Addr(r)), limitedError{perAddr: true})
	}
	if err == nil && !ch.Unlike {
		err = h.newPosts.admit(ctx, r, h.clients, post, user)
		if err == nil && h.limit != nil {
			id := user
			if h.perPost {
				id = user + ":" + post
			}
			ch.Limits[1], err = h.spend(ctx, h.limit, id, limitedError{})
		}
	}
	var res store.Result
	if err == nil {
		res, err = h.changes.Submit(ctx, post, ch)
	}
	for i, b := range ch.Limits {
		b.Settle(res.Waits[i]) // zero when the change was not stored: Redis is asked again next time
	}
	if err == nil && res.Limited > 0 {
		err = &limitedError{perAddr: res.Limited == 1, retryAfter: res.RetryAfter}
	}
	return res, err
}

// bucketLimiter is a Limiter whose check can ride in a change's own script call
// (ratelimit.Limiter).
type bucketLimiter interface {
	Take(id string) (ratelimit.Bucket, time.Duration)
}

// spend checks id against l: on one Redis by returning its bucket for the change's own script call
// (unless l refuses id without Redis), elsewhere in a call of its own (limit). A refusal is
// refused, with the wait.
func (h *Handler) spend(ctx context.Context, l Limiter, id string, refused limitedError) (ratelimit.Bucket, error) {
	if bl, ok := l.(bucketLimiter); ok && h.store.SpendsLimits() {
		b, wait := bl.Take(id)
		if wait > 0 {
			refused.retryAfter = wait
			return ratelimit.Bucket{}, &refused
		}
		return b, nil
	}
	return ratelimit.Bucket{}, limit(ctx, l, id, refused)
}

func (h *Handler) count(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	post := chi.URLParam(r, "postID")
	err := ids.ValidPostID(post)
	if err == nil {
		err = h.allowRead(r)
	}
	var n int64
	if err == nil {
		n, err = h.store.Count(ctx, post)
	}
	if err == nil {
		err = h.store.ConfirmRead(ctx, post)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.outage.ok()
	serve.JSON(w, http.StatusOK, countReply{PostID: post, Count: n})
}

// parse validates the post id first (it costs nothing) and then identifies the user.
func (h *Handler) parse(r *http.Request) (post, user string, err error) {
	post = chi.URLParam(r, "postID")
	if err := ids.ValidPostID(post); err != nil {
		return "", "", err
	}
	user, err = h.identify.UserID(r)
	if err != nil {
		return "", "", err
	}
	return post, user, nil
}

// limit asks l whether id may change something now; a refusal is refused, with the wait: a 429
// with Retry-After.
func limit(ctx context.Context, l Limiter, id string, refused limitedError) error {
	wait, err := l.Allow(ctx, id)
	if err != nil {
		return err
	}
	if wait > 0 {
		refused.retryAfter = wait
		return &refused
	}
	return nil
}

package stream

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/update"
)

// Snapshotter reads posts' current state; the relay implements it.
type Snapshotter interface {
	Snapshot(ctx context.Context, posts []string) ([]update.Update, error)
}

// Config bounds what a stream may ask for.
type Config struct {
	MaxConns       int           // viewers per node; more get 503 + Retry-After
	MaxPosts       int           // posts per stream, at most hub.MaxPosts (0: hub.MaxPosts)
	Retry          time.Duration // base reconnection delay sent as retry:, jittered up to +50%
	MaxPerSource   int           // viewers per client address; 0: no limit
	TrustedProxies []netip.Prefix
	SetupTimeout   time.Duration // subscribe + snapshot must finish within this
}

// Handler serves GET /sse/{postID} and GET /sse?posts=a,b,c.
type Handler struct {
	cfg      Config
	hub      *hub.Hub
	snap     Snapshotter
	log      *zap.Logger
	sources  *perSource
	draining atomic.Bool

	preambles [][]byte // every response head and retry hint a viewer may get (newPreambles)

	Refused atomic.Int64 // viewers turned away because the node or their address was full
}

// New returns a stream handler.
func New(cfg Config, h *hub.Hub, snap Snapshotter, log *zap.Logger) *Handler {
	if cfg.SetupTimeout <= 0 {
		cfg.SetupTimeout = 5 * time.Second
	}
	if cfg.MaxPosts <= 0 || cfg.MaxPosts > hub.MaxPosts {
		cfg.MaxPosts = hub.MaxPosts
	}
	return &Handler{cfg: cfg, hub: h, snap: snap, log: log, sources: newPerSource(cfg.MaxPerSource, cfg.TrustedProxies),
		preambles: newPreambles(cfg.Retry)}
}

// Routes mounts the stream endpoints.
func (h *Handler) Routes(r chi.Router) {
	r.Get("/sse", h.serveMulti)
	r.Get("/sse/{postID}", h.serveSingle)
}

// SetDraining makes the handler refuse new viewers (the node is shutting down).
func (h *Handler) SetDraining() { h.draining.Store(true) }

// Draining reports whether the node refuses new viewers.
func (h *Handler) Draining() bool { return h.draining.Load() }

func (h *Handler) serveSingle(w http.ResponseWriter, r *http.Request) {
	post := chi.URLParam(r, "postID")
	if err := ids.ValidPostID(post); err != nil {
		serve.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	last, resuming := lastEventID(r)
	var resume func(int, update.Update) bool
	if resuming {
		resume = func(_ int, u update.Update) bool { return u.Count != last }
	}
	h.stream(w, r, []string{post}, false, resume)
}

func (h *Handler) serveMulti(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > MaxQueryBytes {
		serve.Error(w, http.StatusBadRequest, errQueryLarge.Error())
		return
	}
	posts, err := parsePosts(r.URL.Query().Get("posts"), h.cfg.MaxPosts)
	if err != nil {
		serve.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	last, resuming := lastEventID(r)
	var resume func(int, update.Update) bool
	if resuming {
		resume = func(_ int, u update.Update) bool { return u.TS > last }
	}
	h.stream(w, r, posts, true, resume)
}

func (h *Handler) stream(w http.ResponseWriter, r *http.Request, posts []string, multi bool, resume func(int, update.Update) bool) {
	v, no := h.admit(r, posts)
	if no != nil {
		h.refuse(w, no)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		h.giveBack(v)
		h.refuse(w, &refuseNoHijack)
		return
	}
	_ = conn.SetDeadline(time.Time{}) // the hub never reads or writes through net's deadlines
	v.Conn = conn
	v.Multi = multi
	v.Resume = resume
	v.Preamble = h.preamble()
	_ = h.hub.Add(v) // the hub owns the viewer now, also if it refuses it
}

// refusal is why a stream was turned away, and how the client is told.
type refusal struct {
	status  int
	retry   time.Duration // Retry-After; 0: none
	msg     string
	counted bool // counted in Refused: the node or the address was full
}

var (
	refuseDraining = refusal{http.StatusServiceUnavailable, time.Second, "node is draining; reconnect", false}
	refuseSource   = refusal{http.StatusTooManyRequests, 10 * time.Second, "too many streams from this address", true}
	refuseFull     = refusal{http.StatusServiceUnavailable, 2 * time.Second, "node is full; try another node", true}
	refuseSetup    = refusal{http.StatusServiceUnavailable, time.Second, "subscription unavailable; retry", false}
	refuseNoHijack = refusal{http.StatusInternalServerError, 0, "streaming unsupported", false}
)

// admit takes everything a stream needs before it can be handed to the hub: a slot of its
// address, an admission of the node, and its posts' subscriptions and state. On refusal it holds
// nothing.
func (h *Handler) admit(r *http.Request, posts []string) (hub.Viewer, *refusal) {
	if h.draining.Load() {
		return hub.Viewer{}, &refuseDraining
	}
	release, ok := h.sources.acquire(r)
	if !ok {
		return hub.Viewer{}, &refuseSource
	}
	if !h.hub.Reserve(h.cfg.MaxConns) {
		if release != nil {
			release()
		}
		return hub.Viewer{}, &refuseFull
	}
	v, err := h.setup(r.Context(), posts)
	v.OnClose = release
	if err != nil {
		h.log.Debug("stream setup", zap.Error(err))
		h.giveBack(v)
		return hub.Viewer{}, &refuseSetup
	}
	return v, nil
}

// giveBack returns what an admitted stream holds when it does not reach the hub.
func (h *Handler) giveBack(v hub.Viewer) {
	h.hub.Release(v.Posts)
	h.hub.Unreserve()
	if v.OnClose != nil {
		v.OnClose()
	}
}

// refuse answers a stream that was turned away, in JSON, with Retry-After when it may retry.
func (h *Handler) refuse(w http.ResponseWriter, no *refusal) {
	if no.counted {
		h.Refused.Add(1)
	}
	if no.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(int(no.retry/time.Second), 1)))
	}
	serve.Error(w, no.status, no.msg)
}

// setup subscribes to every post (returning once Redis confirmed) and then reads the state of
// the posts the node does not know yet, in that order, so that no update can fall between the
// snapshot and the subscription. A post the node is already subscribed to needs no read: the
// node has its newest state, so a crowd joining a hot post (or a reconnect storm) costs Redis
// nothing per viewer. The snapshot also goes to the hub (Prime), healing any update the node
// missed and making the post known.
func (h *Handler) setup(ctx context.Context, posts []string) (hub.Viewer, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.SetupTimeout)
	defer cancel()
	acquired, err := h.hub.Acquire(ctx, posts)
	if err != nil {
		return hub.Viewer{}, err
	}
	snap := make([]update.Update, len(posts))
	var unknown []string
	for i, p := range acquired {
		snap[i] = update.Update{PostID: posts[i]}
		if !p.Known() {
			unknown = append(unknown, posts[i])
		}
	}
	if len(unknown) == 0 {
		return hub.Viewer{Posts: acquired, Snapshot: snap}, nil
	}
	read, err := h.snap.Snapshot(ctx, unknown)
	if err == nil && len(read) != len(unknown) {
		err = errors.New("snapshot size mismatch")
	}
	if err != nil {
		return hub.Viewer{Posts: acquired}, err // the caller gives the references back
	}
	byPost := make(map[string]update.Update, len(read))
	for _, u := range read {
		byPost[u.PostID] = u
		h.hub.Prime(u)
	}
	for i := range snap {
		if u, ok := byPost[snap[i].PostID]; ok {
			snap[i] = u
		}
	}
	return hub.Viewer{Posts: acquired, Snapshot: snap}, nil
}

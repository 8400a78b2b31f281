package stream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/update"
)

// Snapshotter reads posts' current state; the relay implements it.
type Snapshotter interface {
	Snapshot(ctx context.Context, posts []string) ([]update.Update, error)
}

// Config bounds what a stream may ask for.
type Config struct {
	MaxConns     int               // viewers per node; more get 503 + Retry-After
	MaxPosts     int               // posts per stream, at most hub.MaxPosts (0: hub.MaxPosts)
	Retry        time.Duration     // base reconnection delay sent as retry:, jittered up to +50%
	MaxPerSource int               // viewers per client address; 0: no limit
	Clients      clientip.Resolver // the client address behind TRUSTED_PROXIES
	SetupTimeout time.Duration     // subscribe + snapshot must finish within this
}

// Handler serves GET /sse/{postID} and GET /sse?posts=a,b,c, routed by net/http (Routes) or read
// off the connection by the node's fast accept loop (ServeConn); both share the request rules,
// admission and hand-over.
type Handler struct {
	cfg      Config
	hub      *hub.Hub
	posts    *posts.Registry
	snap     Snapshotter
	log      *zap.Logger
	sources  *perSource
	draining atomic.Bool

	preambles [][]byte // every response head and retry hint a viewer may get (newPreambles)

	Refused atomic.Int64 // viewers turned away because the node or their address was full
}

// New returns a stream handler that subscribes its viewers' posts in reg, reads their state with
// snap and hands the viewers to h.
func New(cfg Config, h *hub.Hub, reg *posts.Registry, snap Snapshotter, log *zap.Logger) *Handler {
	if cfg.SetupTimeout <= 0 {
		cfg.SetupTimeout = 5 * time.Second
	}
	if cfg.MaxPosts <= 0 || cfg.MaxPosts > hub.MaxPosts {
		cfg.MaxPosts = hub.MaxPosts
	}
	return &Handler{cfg: cfg, hub: h, posts: reg, snap: snap, log: log, sources: newPerSource(cfg.MaxPerSource, cfg.Clients),
		preambles: newPreambles(cfg.Retry)}
}

// Routes mounts the stream endpoints.
func (h *Handler) Routes(r chi.Router) {
	r.Get(RouteMulti, h.serveMulti)
	r.Get(RouteSingle, h.serveSingle)
}

// SetDraining makes the handler refuse new viewers (the node is shutting down).
func (h *Handler) SetDraining() { h.draining.Store(true) }

// Draining reports whether the node refuses new viewers.
func (h *Handler) Draining() bool { return h.draining.Load() }

func (h *Handler) serveSingle(w http.ResponseWriter, r *http.Request) {
	AllowCrossOrigin(w.Header())
	req, err := routedSingle(r)
	if err != nil {
		serve.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	h.stream(w, r, req)
}

func (h *Handler) serveMulti(w http.ResponseWriter, r *http.Request) {
	AllowCrossOrigin(w.Header())
	req, err := routedMulti(r, h.cfg.MaxPosts)
	if err != nil {
		serve.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	h.stream(w, r, req)
}

// routedSingle reads GET /sse/{postID} as net/http and the router delivered it.
func routedSingle(r *http.Request) (streamRequest, error) {
	return singleRequest(chi.URLParam(r, "postID"), r.URL.RawQuery, r.Header.Get("Last-Event-ID"))
}

// routedMulti reads GET /sse as net/http and the router delivered it.
func routedMulti(r *http.Request, maxPosts int) (streamRequest, error) {
	return multiRequest(r.URL.RawQuery, r.Header.Get("Last-Event-ID"), maxPosts)
}

// stream admits a stream that came through net/http, takes its connection and gives it to the
// hub; ServeConn (fast.go) is the same with a connection the fast accept loop read.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, req streamRequest) {
	v, no := h.admit(r.Context(), sourceOf(r), req.posts)
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
	h.handOver(conn, v, req)
}

// handOver gives an admitted stream's connection to the hub, which writes everything from the
// response head on.
func (h *Handler) handOver(conn net.Conn, v hub.Viewer, req streamRequest) {
	_ = conn.SetDeadline(time.Time{}) // the hub never reads or writes through net's deadlines
	v.Conn = conn
	v.Multi = req.multi
	v.Resume = req.resume()
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

// admit takes everything a stream needs before it can be handed to the hub: a place in its
// address's quota, an admission of the node, and its posts' subscriptions and state. On refusal it
// holds nothing.
func (h *Handler) admit(ctx context.Context, src source, posts []string) (hub.Viewer, *refusal) {
	release, no := h.reserve(src)
	if no != nil {
		return hub.Viewer{}, no
	}
	v, err := h.setup(ctx, posts)
	v.OnClose = release
	if err != nil {
		h.log.Debug("stream setup", zap.Error(err))
		h.giveBack(v)
		return hub.Viewer{}, &refuseSetup
	}
	return v, nil
}

// reserve takes a place in the stream's address quota and an admission of the node; release gives
// back that place (nil: none taken).
func (h *Handler) reserve(src source) (release func(), no *refusal) {
	if h.draining.Load() {
		return nil, &refuseDraining
	}
	release, ok := h.sources.acquire(src)
	if !ok {
		return nil, &refuseSource
	}
	if !h.hub.Reserve(h.cfg.MaxConns) {
		if release != nil {
			release()
		}
		return nil, &refuseFull
	}
	return release, nil
}

// giveBack returns what an admitted stream holds when it does not reach the hub.
func (h *Handler) giveBack(v hub.Viewer) {
	h.posts.Release(v.Posts)
	h.hub.Unreserve()
	if v.OnClose != nil {
		v.OnClose()
	}
}

// refuse answers a stream that was turned away, in JSON, with Retry-After when it may retry.
func (h *Handler) refuse(w http.ResponseWriter, no *refusal) {
	h.count(no)
	if no.retry > 0 {
		w.Header().Set("Retry-After", no.retryAfter())
	}
	serve.Error(w, no.status, no.msg)
}

// count counts a refusal in Refused if it is one the node's or the address's fullness caused.
func (h *Handler) count(no *refusal) {
	if no.counted {
		h.Refused.Add(1)
	}
}

// retryAfter is the Retry-After value of a refusal that has one, in whole seconds.
func (no *refusal) retryAfter() string { return strconv.Itoa(max(int(no.retry/time.Second), 1)) }

// setup subscribes to every post (returning once Redis confirmed) and then reads the state of
// the posts the node does not know yet, in that order, so that no update can fall between the
// snapshot and the subscription. A post the node is already subscribed to needs no read: the
// node has its newest state, so a crowd joining a hot post (or a reconnect storm) costs Redis
// nothing per viewer. The snapshot also goes to the hub (Prime), healing any update the node
// missed and making the post known.
func (h *Handler) setup(ctx context.Context, posts []string) (hub.Viewer, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.SetupTimeout)
	defer cancel()
	acquired, err := h.posts.Acquire(ctx, posts)
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

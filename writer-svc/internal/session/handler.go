package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/writer-svc/internal/auth"
)

// Limiter decides whether a client address may start a session now; a positive duration is how
// long it must wait. ratelimit.Limiter is one, shared by all replicas through Redis.
type Limiter interface {
	Allow(ctx context.Context, source string) (time.Duration, error)
}

// HandlerOptions are a Handler's dependencies.
type HandlerOptions struct {
	Issuer *Issuer
	Limit  Limiter // new sessions per client address (clientip.Source); nil: no limit
	// RefreshLimit bounds refreshes per client address; nil: no limit.
	RefreshLimit Limiter
	Clients      clientip.Resolver // who the client is, behind TRUSTED_PROXIES
	Metrics      *Metrics
	Log          *zap.Logger
	Timeout      time.Duration // bounds each request's Redis work; past it, 503
}

// Handler serves POST /session and POST /session/refresh.
type Handler struct {
	o       HandlerOptions
	logWarn *rate.Limiter // storage failures: one line per 10s, not one per request
}

// NewHandler returns a Handler.
func NewHandler(o HandlerOptions) *Handler {
	return &Handler{o: o, logWarn: rate.NewLimiter(rate.Every(10*time.Second), 1)}
}

// Routes mounts the session API on r.
func (h *Handler) Routes(r chi.Router) {
	r.Post("/session", h.issue)
	r.Post("/session/refresh", h.refresh)
}

// retryAfterUnavailable is what a client is told to wait when Redis failed.
const retryAfterUnavailable = time.Second

// issue starts a session. The rate limit comes first: a refused client costs one Redis call and
// no key work.
func (h *Handler) issue(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Timeout)
	defer cancel()
	if !h.allow(ctx, w, r, h.o.Limit, "new sessions") {
		return
	}
	s, err := h.o.Issuer.Issue(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.o.Metrics.Issued.Inc()
	serve.JSON(w, http.StatusOK, s)
}

// refresh renews the bearer token of the request for the same user and session.
func (h *Handler) refresh(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Timeout)
	defer cancel()
	if !h.allow(ctx, w, r, h.o.RefreshLimit, "session refreshes") {
		return
	}
	raw, err := auth.BearerToken(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s, err := h.o.Issuer.Refresh(ctx, raw)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.o.Metrics.Refreshed.Inc()
	serve.JSON(w, http.StatusOK, s)
}

// allow asks l (nil: no limit) whether the client address may do what now, and otherwise answers
// the request itself: 429 with Retry-After, or 503 when Redis could not be asked.
func (h *Handler) allow(ctx context.Context, w http.ResponseWriter, r *http.Request, l Limiter, what string) bool {
	if l == nil {
		return true
	}
	wait, err := l.Allow(ctx, clientip.Source(h.o.Clients.Addr(r)))
	if err != nil {
		h.fail(w, r, err)
		return false
	}
	if wait > 0 {
		h.o.Metrics.RateLimited.Inc()
		secs := max(int((wait+time.Second-1)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		serve.Error(w, http.StatusTooManyRequests, fmt.Sprintf("too many %s from this address: retry in %ds", what, secs))
		return false
	}
	return true
}

// fail answers err: a bad token is 401, anything else is Redis failing and gets 503.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, auth.ErrUnauthenticated) {
		h.o.Metrics.Refused.Inc()
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		serve.Error(w, http.StatusUnauthorized, err.Error())
		return
	}
	h.o.Metrics.Unavailable.Inc()
	if !errors.Is(err, context.Canceled) && h.logWarn.Allow() {
		h.o.Log.Warn("session request failed: storage unavailable", zap.String("path", r.URL.Path), zap.Error(err))
	}
	serve.Unavailable(w, retryAfterUnavailable, "storage unavailable, retry")
}

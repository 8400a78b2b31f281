package likeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/writerapi"
	"github.com/likes/likes/writer-svc/internal/auth"
	"github.com/likes/likes/writer-svc/internal/batch"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/userlikes"
)

// retryAfterUnavailable is what a client is told to wait when Redis failed: short, because the
// dedup key makes a retried like safe and most outages are a failover or a restart.
const retryAfterUnavailable = time.Second

// limitedError is a like refused by the rate limit.
type limitedError struct {
	retryAfter time.Duration
	perAddr    bool // the client address's limit, not the user's
	newPost    bool // the limit on new posts, not on likes
	data       bool // the limit on reads and erasures of user data, not on likes
	read       bool // the limit on reads of counts, not on likes
}

func (e *limitedError) Error() string {
	if e.read {
		return fmt.Sprintf("too many reads from this address: retry in %ds", ceilSeconds(e.retryAfter))
	}
	if e.data {
		return fmt.Sprintf("too many reads or erasures of likes from this address: retry in %ds", ceilSeconds(e.retryAfter))
	}
	if e.newPost && e.perAddr {
		return fmt.Sprintf("too many new posts liked or reacted to from this address: retry in %ds", ceilSeconds(e.retryAfter))
	}
	if e.newPost {
		return fmt.Sprintf("too many new posts liked or reacted to: retry in %ds", ceilSeconds(e.retryAfter))
	}
	if e.perAddr {
		return fmt.Sprintf("too many likes from this address: retry in %ds", ceilSeconds(e.retryAfter))
	}
	return fmt.Sprintf("too many likes: retry in %ds", ceilSeconds(e.retryAfter))
}

// fail answers err with its status: this is the one place errors become HTTP statuses. Anything
// not recognised as the client's fault is a storage failure and gets 503, never a 200.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var limited *limitedError
	var reacted *reactedError
	switch {
	case errors.Is(err, ids.ErrPostID), errors.Is(err, ids.ErrUserID),
		errors.Is(err, ids.ErrNoPosts), errors.Is(err, ids.ErrTooManyPosts),
		errors.Is(err, auth.ErrNoUser), errors.Is(err, auth.ErrManyUsers),
		errors.Is(err, userlikes.ErrCursor), errors.Is(err, userlikes.ErrLimit), errors.Is(err, ErrKind):
		serve.Error(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, auth.ErrForbidden), errors.Is(err, auth.ErrAdminOff):
		serve.Error(w, http.StatusForbidden, err.Error())
	case errors.Is(err, auth.ErrUnauthenticated):
		h.metrics.AuthFailure.Inc()
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		serve.Error(w, http.StatusUnauthorized, err.Error())
	case errors.Is(err, batch.ErrBusy), errors.Is(err, batch.ErrClosed):
		// Counted (QueueFull) where it happens, not logged: a storm would log every refusal.
		serve.Unavailable(w, retryAfterUnavailable, err.Error())
	case errors.As(err, &reacted):
		h.metrics.ReactionsRefused.Inc()
		w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(reacted.retryAfter)))
		serve.JSON(w, http.StatusTooManyRequests, reactedBody{Error: err.Error(), RetryAfterMS: reacted.retryAfter.Milliseconds()})
	case errors.As(err, &limited):
		h.metrics.RateLimited.Inc()
		w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(limited.retryAfter)))
		serve.Error(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, store.ErrNotReplicated):
		// Stored on the primary, not yet on enough replicas: a 503 all the same, since the
		// like could be lost with the primary. Counted per batch (batch.Metrics.NotReplicated).
		h.outage.fail(r, err)
		serve.UnavailableBody(w, retryAfterUnavailable, writerapi.Unconfirmed{Error: "not yet confirmed by a replica, retry", Unconfirmed: true})
	default:
		h.metrics.RedisErrors.Inc()
		if !errors.Is(err, context.Canceled) { // a client that left says nothing of the storage
			h.outage.fail(r, err)
		}
		if errors.Is(err, batch.ErrUnanswered) {
			// Redis or the way to it failed mid-call: the change may have been applied. Counted
			// per batch (batch.Metrics.Unanswered).
			serve.UnavailableBody(w, retryAfterUnavailable, writerapi.Unconfirmed{Error: "storage did not answer in time, the change may have been applied, retry", Unconfirmed: true})
			return
		}
		serve.Unavailable(w, retryAfterUnavailable, "storage unavailable, retry")
	}
}

// ceilSeconds rounds d up to whole seconds, at least 1, as Retry-After wants.
func ceilSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// reactedBody is a refused reaction's reply: the wait in milliseconds too, since Retry-After
// counts whole seconds and a reaction interval is a few of them.
type reactedBody struct {
	Error        string `json:"error"`
	RetryAfterMS int64  `json:"retry_after_ms"`
}

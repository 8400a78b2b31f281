package likeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/writer-svc/internal/store"
)

// ErrKind is a reaction of a kind REACTION_KINDS does not list.
var ErrKind = errors.New("unknown reaction kind")

// reactedError is a reaction its user's gate refused: the user reacted to the post less than the
// reaction interval ago. A 429 with Retry-After, like a rate-limited like.
type reactedError struct{ retryAfter time.Duration }

func (e *reactedError) Error() string {
	return fmt.Sprintf("one reaction per post every interval: retry in %dms", e.retryAfter.Milliseconds())
}

// react serves POST /react/{postID}/{kind}. It passes none of the like limits: the gate in the
// script is its limit (one reaction per user and post per interval), and a conference audience
// behind one address would otherwise be held to one address's likes. What a farm of fresh
// sessions can react is bounded by the sessions one address gets, and the posts it can react to
// into existence by the limit on new posts (newPosts).
func (h *Handler) react(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	kind := chi.URLParam(r, "kind")
	post, user, err := h.parse(r)
	if err == nil && !h.kinds[kind] {
		err = fmt.Errorf("%w %q: want one of %s", ErrKind, kind, h.kindList)
	}
	if err == nil {
		err = h.newPosts.admit(ctx, r, h.clients, post, user)
	}
	var res store.Result
	if err == nil {
		res, err = h.changes.React(ctx, post, user, kind)
	}
	if err == nil && !res.Changed {
		err = &reactedError{retryAfter: max(res.RetryAfter, time.Millisecond)}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.outage.ok()
	h.newPosts.exists(post)
	h.metrics.Reactions.WithLabelValues(kind).Inc()
	serve.RawJSON(w, http.StatusOK, appendReactReply(make([]byte, 0, 96), post, kind, res))
}

// appendReactReply appends {"post_id":"42","kind":"clap","count":13,"ts":1700000000000000} and a
// newline, as encoding/json would write it: post ids and kinds need no escaping (package ids).
// count is the kind's count after the reaction, ts the version of the update that carries it: a
// viewer has seen the reaction once it has a reactions event with that ts or a later one.
func appendReactReply(dst []byte, post, kind string, res store.Result) []byte {
	dst = append(dst, `{"post_id":"`...)
	dst = append(dst, post...)
	dst = append(dst, `","kind":"`...)
	dst = append(dst, kind...)
	dst = append(dst, `","count":`...)
	dst = strconv.AppendInt(dst, res.Count, 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, res.Version, 10)
	return append(dst, "}\n"...)
}

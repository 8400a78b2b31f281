package timeline

import (
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
)

// What one request may ask for: a range of at most MaxSpan in at most MaxPoints steps, so that a
// read is at most MaxCommands: MaxMinutes (361) minutes x (2 + kinds) GETRANGEs, a few
// milliseconds of Redis, and a reply of a few hundred kilobytes. A talk and its questions fit; a
// longer analysis reads several.
const (
	MaxSpan     = 6 * time.Hour
	MaxPoints   = 10_000
	DefaultSpan = time.Hour
	// defaultPoints is how many steps a request that names no step gets, at most.
	defaultPoints = 600
)

// Limiter decides whether a client address may read now; a positive duration is how long to wait
// (ratelimit.Limiter).
type Limiter interface {
	Allow(ctx context.Context, id string) (time.Duration, error)
}

// Options are a Handler's dependencies.
type Options struct {
	Reader  *Reader
	Limit   Limiter // per client address; nil: none
	Clients clientip.Resolver
	Timeout time.Duration // bounds each request's Redis work; past it, 503
	Now     func() time.Time
}

// Handler serves GET /posts/{postID}/timeline.
type Handler struct{ o Options }

// NewHandler returns a Handler.
func NewHandler(o Options) *Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handler{o: o}
}

// Routes mounts the timeline on r.
func (h *Handler) Routes(r chi.Router) { r.Get("/posts/{postID}/timeline", h.serve) }

// errQuery is a query the timeline does not take: a 400.
var errQuery = errors.New("timeline query")

// serve answers ?from=&to=&step=&format= (ParseQuery says what each may be). A query out of its
// range is a 400 that names the range, before the rate limit and any Redis work.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Timeout)
	defer cancel()
	post := chi.URLParam(r, "postID")
	if err := ids.ValidPostID(post); err != nil {
		serve.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	q, err := ParseQuery(r.URL.Query(), h.o.Now(), strings.Contains(r.Header.Get("Accept"), "text/csv"))
	if err != nil {
		serve.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if h.o.Limit != nil {
		wait, err := h.o.Limit.Allow(ctx, clientip.Source(h.o.Clients.Addr(r)))
		if err != nil {
			serve.Unavailable(w, time.Second, "storage unavailable, retry shortly")
			return
		}
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
			serve.Error(w, http.StatusTooManyRequests, "too many reads from this address: retry later")
			return
		}
	}
	tl, err := h.o.Reader.Read(ctx, post, q.From, q.To, q.Step)
	if errors.Is(err, errOutOfBounds) { // ParseQuery let through what Read refuses: our bug, not Redis's
		serve.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	if err != nil {
		serve.Unavailable(w, time.Second, "storage unavailable, retry shortly")
		return
	}
	if q.Format == "csv" {
		writeCSV(w, tl, h.o.Reader.kinds)
		return
	}
	serve.JSON(w, http.StatusOK, tl)
}

// writeCSV writes tl as t,likes,unlikes,<kind>... rows, one per step, t its start in unix seconds.
func writeCSV(w http.ResponseWriter, tl Timeline, kinds []string) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	names := append([]string{Likes, Unlikes}, kinds...)
	_ = cw.Write(append([]string{"t"}, names...))
	row := make([]string, 1+len(names))
	for i := range tl.Series[Likes] {
		row[0] = strconv.FormatInt(tl.From+int64(i)*tl.Step, 10)
		for j, n := range names {
			row[1+j] = strconv.FormatInt(tl.Series[n][i], 10)
		}
		_ = cw.Write(row)
	}
	cw.Flush()
}

package timeline

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
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
// read is at most 360 minutes x (2 + kinds) GETRANGEs (a few milliseconds of Redis) and a reply
// of a few hundred kilobytes. A talk and its questions fit; a longer analysis reads several.
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

// serve answers ?from=&to=&step=&format=: from and to are unix seconds or RFC 3339 times (to
// excluded; default the last hour up to now), step whole seconds or a Go duration (default: at
// most 600 steps), format json (default) or csv (also chosen by Accept: text/csv).
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Timeout)
	defer cancel()
	post := chi.URLParam(r, "postID")
	if err := ids.ValidPostID(post); err != nil {
		serve.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	from, to, step, err := h.query(r)
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
	tl, err := h.o.Reader.Read(ctx, post, from, to, step)
	if err != nil {
		serve.Unavailable(w, time.Second, "storage unavailable, retry shortly")
		return
	}
	if r.URL.Query().Get("format") == "csv" || (r.URL.Query().Get("format") == "" && strings.Contains(r.Header.Get("Accept"), "text/csv")) {
		writeCSV(w, tl, h.o.Reader.kinds)
		return
	}
	serve.JSON(w, http.StatusOK, tl)
}

// query reads and bounds the range and step.
func (h *Handler) query(r *http.Request) (from, to, step int64, err error) {
	q := r.URL.Query()
	if f := q.Get("format"); f != "" && f != "json" && f != "csv" {
		return 0, 0, 0, fmt.Errorf("%w: format %q: want json or csv", errQuery, f)
	}
	to = h.o.Now().Unix() + 1 // the current second included
	if v := q.Get("to"); v != "" {
		if to, err = parseTime(v); err != nil {
			return 0, 0, 0, fmt.Errorf("%w: to: %w", errQuery, err)
		}
	}
	from = to - int64(DefaultSpan/time.Second)
	if v := q.Get("from"); v != "" {
		if from, err = parseTime(v); err != nil {
			return 0, 0, 0, fmt.Errorf("%w: from: %w", errQuery, err)
		}
	}
	span := to - from
	switch {
	case span <= 0:
		return 0, 0, 0, fmt.Errorf("%w: from %d is not before to %d", errQuery, from, to)
	case span > int64(MaxSpan/time.Second):
		return 0, 0, 0, fmt.Errorf("%w: %d s asked; at most %d at a time", errQuery, span, int64(MaxSpan/time.Second))
	}
	step = (span + defaultPoints - 1) / defaultPoints
	if v := q.Get("step"); v != "" {
		if step, err = parseStep(v); err != nil {
			return 0, 0, 0, fmt.Errorf("%w: step: %w", errQuery, err)
		}
	}
	if points := (span + step - 1) / step; points > MaxPoints {
		return 0, 0, 0, fmt.Errorf("%w: %d steps asked; at most %d: a longer step", errQuery, points, MaxPoints)
	}
	return from, to, step, nil
}

// parseTime reads unix seconds or an RFC 3339 time.
func parseTime(v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%d: want unix seconds", n)
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, fmt.Errorf("%q: want unix seconds or an RFC 3339 time", v)
	}
	return t.Unix(), nil
}

// parseStep reads whole seconds or a Go duration of whole seconds, at least one.
func parseStep(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil || d%time.Second != 0 {
			return 0, fmt.Errorf("%q: want whole seconds, such as 10 or 1m", v)
		}
		n = int64(d / time.Second)
	}
	if n < 1 {
		return 0, fmt.Errorf("%q: want at least 1 s", v)
	}
	return n, nil
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

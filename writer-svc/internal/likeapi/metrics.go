package likeapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/likes/likes/writer-svc/internal/store"
)

// Metrics count what the like API's requests changed and why some were refused. Request counts and
// latencies come from serve.RequestMetrics, script calls from batch.Metrics.
type Metrics struct {
	Likes       prometheus.Counter
	Unlikes     prometheus.Counter
	Duplicates  *prometheus.CounterVec
	RateLimited prometheus.Counter
	AuthFailure prometheus.Counter
	RedisErrors prometheus.Counter
	// Reactions counts reactions stored, by kind (REACTION_KINDS bounds the labels);
	// ReactionsRefused those a user's reaction interval refused with 429.
	Reactions        *prometheus.CounterVec
	ReactionsRefused prometheus.Counter
}

// NewMetrics registers the like metrics in reg under namespace.
func NewMetrics(reg prometheus.Registerer, namespace string) *Metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	}
	m := &Metrics{
		Likes:   counter("likes_total", "Likes stored (new for their user and post)."),
		Unlikes: counter("unlikes_total", "Likes removed."),
		Duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "duplicates_total",
			Help: "Requests that changed nothing: a repeated like, or an unlike of a post not liked.",
		}, []string{"op"}),
		RateLimited: counter("rate_limited_total", "Likes refused with 429 by the per-user rate limit."),
		AuthFailure: counter("auth_failures_total", "Requests refused with 401."),
		RedisErrors: counter("redis_errors_total", "Requests answered 503 because Redis failed or timed out."),
		Reactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reactions_total", Help: "Reactions stored, by kind.",
		}, []string{"kind"}),
		ReactionsRefused: counter("reactions_refused_total",
			"Reactions refused with 429 because their user reacted to the post less than REACTION_INTERVAL ago."),
	}
	reg.MustRegister(m.Likes, m.Unlikes, m.Duplicates, m.RateLimited, m.AuthFailure, m.RedisErrors,
		m.Reactions, m.ReactionsRefused)
	return m
}

// record counts what one request changed.
func (m *Metrics) record(op string, r store.Result) {
	if !r.Changed {
		m.Duplicates.WithLabelValues(op).Inc()
		return
	}
	if op == opLike {
		m.Likes.Inc()
	} else {
		m.Unlikes.Inc()
	}
}

package like

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count what the writer did with likes. Request counts and latencies come from
// serve.RequestMetrics; these say what the requests changed.
type Metrics struct {
	Likes       prometheus.Counter
	Unlikes     prometheus.Counter
	Duplicates  *prometheus.CounterVec
	Publishes   prometheus.Counter
	RateLimited prometheus.Counter
	AuthFailure prometheus.Counter
	RedisErrors prometheus.Counter
	QueueFull   prometheus.Counter
	BatchSize   prometheus.Histogram
	// Reactions counts reactions stored, by kind (REACTION_KINDS bounds the labels);
	// ReactionsRefused those a user's reaction interval refused with 429.
	Reactions        *prometheus.CounterVec
	ReactionsRefused prometheus.Counter
	// Expired and NotReplicated count script calls, not requests, by why a whole batch was
	// answered 503, since each asks an operator for something else: Redis too slow for
	// REQUEST_TIMEOUT, or replicas behind or gone.
	Expired       prometheus.Counter
	NotReplicated prometheus.Counter
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
		Publishes:   counter("publishes_total", "Updates published to a post's channel."),
		RateLimited: counter("rate_limited_total", "Likes refused with 429 by the per-user rate limit."),
		AuthFailure: counter("auth_failures_total", "Requests refused with 401."),
		RedisErrors: counter("redis_errors_total", "Requests answered 503 because Redis failed or timed out."),
		QueueFull:   counter("queue_full_total", "Likes and unlikes answered 503 because their post already had a full queue."),
		BatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "batch_size", Help: "Likes, unlikes and reactions per script call.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 to 1024
		}),
		Reactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reactions_total", Help: "Reactions stored, by kind.",
		}, []string{"kind"}),
		ReactionsRefused: counter("reactions_refused_total",
			"Reactions refused with 429 because their user reacted to the post less than REACTION_INTERVAL ago."),
		Expired: counter("expired_batches_total",
			"Script calls that Redis refused, changing nothing, because the earliest deadline of their likes had passed."),
		NotReplicated: counter("unreplicated_batches_total",
			"Script calls stored on the primary but confirmed by fewer than REDIS_ACK_REPLICAS replicas in time (their likes got 503)."),
	}
	reg.MustRegister(m.Likes, m.Unlikes, m.Duplicates, m.Publishes, m.RateLimited, m.AuthFailure, m.RedisErrors,
		m.QueueFull, m.BatchSize, m.Reactions, m.ReactionsRefused, m.Expired, m.NotReplicated)
	return m
}

// record counts what one request changed.
func (m *Metrics) record(op string, r Result) {
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

// batch counts one script call of size changes and its publish: the script publishes once when
// any of its changes changed something. res is nil when the call failed with err.
func (m *Metrics) batch(res []Result, size int, err error) {
	m.BatchSize.Observe(float64(size))
	switch {
	case errors.Is(err, ErrExpired):
		m.Expired.Inc()
	case errors.Is(err, ErrNotReplicated):
		m.NotReplicated.Inc()
	}
	for _, r := range res {
		if r.Changed {
			m.Publishes.Inc()
			return
		}
	}
}

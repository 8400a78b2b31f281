package batch

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/likes/likes/writer-svc/internal/store"
)

// Metrics count the coalescer's script calls and the changes it refused.
type Metrics struct {
	Publishes prometheus.Counter
	QueueFull prometheus.Counter
	BatchSize prometheus.Histogram
	// Expired and NotReplicated count script calls, not requests, by why a whole batch was
	// answered 503, since each asks an operator for something else: Redis too slow for
	// REQUEST_TIMEOUT, or replicas behind or gone.
	Expired       prometheus.Counter
	NotReplicated prometheus.Counter
	// Unanswered counts calls that Redis did not settle (ErrUnanswered): Redis or the way to it
	// failed mid-call.
	Unanswered prometheus.Counter
}

// NewMetrics registers the batch metrics in reg under namespace.
func NewMetrics(reg prometheus.Registerer, namespace string) *Metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	}
	m := &Metrics{
		Publishes: counter("publishes_total", "Updates published to a post's channel."),
		QueueFull: counter("queue_full_total", "Likes and unlikes answered 503 because their post already had a full queue."),
		BatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "batch_size", Help: "Likes, unlikes and reactions per script call.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 to 1024
		}),
		Expired: counter("expired_batches_total",
			"Script calls that Redis refused, changing nothing, because the earliest deadline of their likes had passed."),
		NotReplicated: counter("unreplicated_batches_total",
			"Script calls stored on the primary but confirmed by fewer than REDIS_ACK_REPLICAS replicas in time (their likes got 503)."),
		Unanswered: counter("unanswered_batches_total",
			"Script calls that Redis did not answer in time (a timeout or a lost connection): their likes got 503 marked unconfirmed, since they may have been applied."),
	}
	reg.MustRegister(m.Publishes, m.QueueFull, m.BatchSize, m.Expired, m.NotReplicated, m.Unanswered)
	return m
}

// call counts one script call of size changes and its publish: the script publishes once when
// any of its changes changed something. res is nil when the call failed with err.
func (m *Metrics) call(res []store.Result, size int, err error) {
	m.BatchSize.Observe(float64(size))
	switch {
	case errors.Is(err, store.ErrExpired):
		m.Expired.Inc()
	case errors.Is(err, store.ErrNotReplicated):
		m.NotReplicated.Inc()
	case errors.Is(err, ErrUnanswered):
		m.Unanswered.Inc()
	}
	for _, r := range res {
		if r.Changed {
			m.Publishes.Inc()
			return
		}
	}
}

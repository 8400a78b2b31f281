package session

import "github.com/prometheus/client_golang/prometheus"

// Metrics count what the session endpoints answered, so that a flood of issues (or of refused
// refreshes after a key was lost) shows on a dashboard rather than in a log.
type Metrics struct {
	Issued      prometheus.Counter
	Refreshed   prometheus.Counter
	Refused     prometheus.Counter // 401: bad, expired, forged or too old tokens
	RateLimited prometheus.Counter // 429: issues over an address's rate
	Unavailable prometheus.Counter // 503: Redis could not be asked
}

// NewMetrics registers the session metrics on reg under namespace.
func NewMetrics(reg prometheus.Registerer, namespace string) *Metrics {
	c := func(name, help string) prometheus.Counter {
		m := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
		reg.MustRegister(m)
		return m
	}
	return &Metrics{
		Issued:      c("sessions_issued_total", "Anonymous sessions started (POST /session)."),
		Refreshed:   c("sessions_refreshed_total", "Session tokens renewed (POST /session/refresh)."),
		Refused:     c("session_refusals_total", "Session refreshes refused with 401."),
		RateLimited: c("session_rate_limited_total", "Session issues and refreshes refused with 429 by the per-address rates."),
		Unavailable: c("session_unavailable_total", "Session requests answered 503 because Redis could not be asked."),
	}
}

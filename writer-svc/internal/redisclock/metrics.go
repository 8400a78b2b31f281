package redisclock

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// Register exports c's figures in reg under namespace: the offset, its uncertainty and the age
// of the measurement they come from, read at each scrape. Before the first measurement the
// uncertainty and the age are +Inf.
func (c *Clock) Register(reg prometheus.Registerer, namespace string) {
	seconds := func(d float64) float64 {
		if d >= math.MaxInt64 {
			return math.Inf(1)
		}
		return d / 1e9
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "redis_clock_offset_seconds",
			Help: "Redis' clock less this writer's, as last measured (negative: Redis behind).",
		}, func() float64 { return c.Offset().Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "redis_clock_uncertainty_seconds",
			Help: "Half the round trip of the measurement behind redis_clock_offset_seconds: the true offset is within it; past CLOCK_UNCERTAINTY_MAX writes get 503.",
		}, func() float64 { u, _ := c.Uncertainty(); return seconds(float64(u)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "redis_clock_age_seconds",
			Help: "Time since the last successful measurement of Redis' clock; past three measurement intervals writes get 503.",
		}, func() float64 { _, a := c.Uncertainty(); return seconds(float64(a)) }),
	)
}

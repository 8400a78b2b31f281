package redisclock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestMeasuresLocalRedisNearZero: a redis-server on this host shares its clock, so the offset is
// within the measurement's own uncertainty (and a millisecond of slack for TIME's rounding).
func TestMeasuresLocalRedisNearZero(t *testing.T) {
	srv := redistest.Start(t)
	c := New(srv.Client(t), Options{})
	if err := c.Trusted(); !errors.Is(err, ErrUnknown) {
		t.Errorf("before any measurement: %v; want ErrUnknown", err)
	}
	if err := c.Measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	u, age := c.Uncertainty()
	if off := c.Offset(); off.Abs() > u+time.Millisecond {
		t.Errorf("offset to a local redis %s ± %s; want about 0", off, u)
	}
	if u <= 0 || u > DefaultMaxUncertainty || age > time.Second {
		t.Errorf("uncertainty %s, age %s; want a loopback round trip's, just measured", u, age)
	}
	if err := c.Trusted(); err != nil {
		t.Errorf("just measured: %v", err)
	}
}

// TestMeasuresSkewedWriterClock stands for a writer whose clock is a second ahead of Redis', or
// behind it: the measured offset is the skew, negated, within the uncertainty.
func TestMeasuresSkewedWriterClock(t *testing.T) {
	srv := redistest.Start(t)
	for _, skew := range []time.Duration{time.Second, -time.Second} {
		c := New(srv.Client(t), Options{})
		c.now = func() time.Time { return time.Now().Add(skew) }
		if err := c.Measure(context.Background()); err != nil {
			t.Fatal(err)
		}
		u, _ := c.Uncertainty()
		if off := c.Offset(); (off + skew).Abs() > u+time.Millisecond {
			t.Errorf("writer clock %s off: measured %s ± %s; want %s", skew, off, u, -skew)
		}
	}
}

// TestUncertaintyBound: a measurement whose round trip exceeds twice the bound is not trusted.
func TestUncertaintyBound(t *testing.T) {
	srv := redistest.Start(t)
	c := New(srv.Client(t), Options{MaxUncertainty: time.Nanosecond})
	if err := c.Measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Trusted(); !errors.Is(err, ErrUncertain) {
		t.Errorf("bound 1ns: %v; want ErrUncertain", err)
	}
}

// TestStaleWhenRedisGone: Start measures, the goroutine keeps measuring; once Redis is gone the
// last measurement ages past Valid and the offset is no longer trusted. The metrics follow.
func TestStaleWhenRedisGone(t *testing.T) {
	srv := redistest.Start(t)
	c := New(srv.Client(t), Options{Every: 20 * time.Millisecond, Valid: 100 * time.Millisecond})
	reg := prometheus.NewRegistry()
	c.Register(reg, "likes_writer")
	stop := c.Start(context.Background())
	defer stop()
	if err := c.Trusted(); err != nil {
		t.Fatalf("after Start: %v", err)
	}
	// measured is when the last measurement was taken (to within the microseconds between the
	// two clock readings): a second one is at least Every (20 ms) later.
	measured := func() time.Time { _, age := c.Uncertainty(); return time.Now().Add(-age) }
	first := measured()
	poll.Until(t, 5*time.Second, "a second measurement", func() bool { return measured().Sub(first) > 10*time.Millisecond })
	srv.Kill()
	poll.Until(t, 5*time.Second, "the offset untrusted with Redis gone", func() bool { return errors.Is(c.Trusted(), ErrUnknown) })
	if age := gauge(t, reg, "likes_writer_redis_clock_age_seconds"); age < 0.1 {
		t.Errorf("age metric %gs with Redis gone; want past Valid (0.1s)", age)
	}
	if off := gauge(t, reg, "likes_writer_redis_clock_offset_seconds"); off != c.Offset().Seconds() {
		t.Errorf("offset metric %g; want %g", off, c.Offset().Seconds())
	}
	if u := gauge(t, reg, "likes_writer_redis_clock_uncertainty_seconds"); u <= 0 || u > 0.025 {
		t.Errorf("uncertainty metric %g; want the last loopback measurement's", u)
	}
}

// gauge returns the value of the gauge name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

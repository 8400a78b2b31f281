// Package redisclock measures how far Redis' clock is from the writer's, so that the like
// script's cutoff, computed on the writer's clock, can be sent on Redis' (store.Options
// ClockOffset), and so that the writer can refuse writes while it does not know the offset well
// enough for its guarantee that a like answered 503 is never stored later.
//
// A measurement is a few Redis TIME round trips. Each gives an estimate of the offset (Redis'
// time less the midpoint of its send and receive on the writer's clock) whose error is at most
// half its round trip, whatever the asymmetry of the two legs; the estimate of the shortest round
// trip is kept. On a Redis Cluster every primary is measured (ClusterClient.ForEachMaster), since
// a like batch runs on whichever primary holds its post: the reported offset is the middle of the
// interval that covers every primary's estimate and its uncertainty, and the uncertainty is that
// interval's half-width, so the primaries' disagreement counts against the bound. A Sentinel's
// failover client reaches the primary, which is the node the script runs on.
package redisclock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultEvery   = 5 * time.Second
	DefaultSamples = 5
	// DefaultMaxUncertainty is the like store's own margin (store.ClockSkew, 25 ms in
	// writer-svc/internal/store/store.go): the script's cutoff is the batch's deadline less that
	// margin, so an offset wrong by no more than it still refuses every batch answered 503.
	DefaultMaxUncertainty = 25 * time.Millisecond
)

// Options tune a Clock.
type Options struct {
	// Every is how often the offset is measured again; 0 means DefaultEvery.
	Every time.Duration
	// Samples is how many TIME round trips one measurement takes per node; 0 means DefaultSamples.
	Samples int
	// MaxUncertainty is the largest uncertainty Trusted accepts; 0 means DefaultMaxUncertainty.
	MaxUncertainty time.Duration
	// Valid is how long a measurement is trusted when the next ones fail (Redis unreachable);
	// 0 means three times Every. Clocks drift apart by tens of microseconds a second at most
	// (quartz, 50 ppm), so the default's 15 s add under a millisecond of error.
	Valid time.Duration
}

// ErrUnknown is Trusted's answer while no recent measurement exists.
var ErrUnknown = errors.New("redis clock offset unknown")

// ErrUncertain is Trusted's answer while the last measurement is too uncertain.
var ErrUncertain = errors.New("redis clock offset too uncertain")

// Clock is the writer's latest estimate of Redis' clock against its own.
type Clock struct {
	rdb redis.UniversalClient
	o   Options
	// now is the writer's clock; tests shift it to stand for a writer whose clock is off.
	now func() time.Time

	mu   sync.Mutex
	last measurement
}

// measurement is one measurement's outcome; at is zero before the first.
type measurement struct {
	offset      time.Duration // Redis' clock less the writer's
	uncertainty time.Duration // the true offset is within offset ± uncertainty
	at          time.Time     // on the process's monotonic clock
}

// New returns a Clock that measures rdb's nodes; it measures nothing until Measure or Start.
func New(rdb redis.UniversalClient, o Options) *Clock {
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Samples <= 0 {
		o.Samples = DefaultSamples
	}
	if o.MaxUncertainty <= 0 {
		o.MaxUncertainty = DefaultMaxUncertainty
	}
	if o.Valid <= 0 {
		o.Valid = 3 * o.Every
	}
	return &Clock{rdb: rdb, o: o, now: time.Now}
}

// Offset is how far Redis' clock is ahead of the writer's (negative: behind), as last measured;
// 0 before the first measurement.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last.offset
}

// Uncertainty is the last measurement's uncertainty, and its age; both are +Inf seconds' worth
// (math.MaxInt64) before the first measurement.
func (c *Clock) Uncertainty() (uncertainty, age time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last.at.IsZero() {
		return math.MaxInt64, math.MaxInt64
	}
	return c.last.uncertainty, time.Since(c.last.at)
}

// Trusted returns nil when Offset can be relied on: measured within Valid, with an uncertainty
// within MaxUncertainty. Otherwise ErrUnknown or ErrUncertain, wrapped with the figures.
func (c *Clock) Trusted() error {
	u, age := c.Uncertainty()
	switch {
	case age > c.o.Valid:
		if age == math.MaxInt64 {
			return fmt.Errorf("%w: not measured yet", ErrUnknown)
		}
		return fmt.Errorf("%w: last measured %s ago", ErrUnknown, age.Round(time.Millisecond))
	case u > c.o.MaxUncertainty:
		return fmt.Errorf("%w: ±%s, bound %s", ErrUncertain, u, c.o.MaxUncertainty)
	}
	return nil
}

// Measure measures the offset now and keeps it; on error the previous measurement stays (and
// ages).
func (c *Clock) Measure(ctx context.Context) error {
	var m measurement
	var err error
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		m, err = c.measureCluster(ctx, cc)
	} else {
		m, err = c.measureNode(ctx, c.rdb)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.last = m
	c.mu.Unlock()
	return nil
}

// measureCluster measures every primary and merges their estimates (see the package doc).
func (c *Clock) measureCluster(ctx context.Context, cc *redis.ClusterClient) (measurement, error) {
	var mu sync.Mutex
	var lo, hi time.Duration
	n := 0
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		m, err := c.measureNode(ctx, node)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if n == 0 || m.offset-m.uncertainty < lo {
			lo = m.offset - m.uncertainty
		}
		if n == 0 || m.offset+m.uncertainty > hi {
			hi = m.offset + m.uncertainty
		}
		n++
		return nil
	})
	if err == nil && n == 0 {
		err = errors.New("redis clock: no primary to measure")
	}
	if err != nil {
		return measurement{}, err
	}
	return measurement{offset: lo + (hi-lo)/2, uncertainty: (hi - lo) / 2, at: time.Now()}, nil
}

// measureNode takes Samples TIME round trips to one node and keeps the shortest one's estimate.
func (c *Clock) measureNode(ctx context.Context, node redis.Cmdable) (measurement, error) {
	best := measurement{uncertainty: -1}
	for range c.o.Samples {
		sent := c.now()
		redisNow, err := node.Time(ctx).Result()
		if err != nil {
			return measurement{}, fmt.Errorf("redis clock: %w", err)
		}
		rtt := c.now().Sub(sent) // monotonic: immune to the wall clock stepping meanwhile
		if best.uncertainty >= 0 && rtt/2 >= best.uncertainty {
			continue
		}
		mid := sent.Add(rtt / 2).Round(0) // wall clock only, as Redis' time is
		best = measurement{offset: redisNow.Sub(mid), uncertainty: rtt / 2}
	}
	// Redis' TIME has microsecond resolution: the estimate cannot be better than that.
	best.uncertainty = max(best.uncertainty, time.Microsecond)
	best.at = time.Now()
	return best, nil
}

// Start measures once (for at most a second, so a Redis that is down holds up the start no
// longer), then again in a goroutine (run) that stop ends; ctx ending ends it too.
func (c *Clock) Start(ctx context.Context) (stop func()) {
	first, cancelFirst := context.WithTimeout(ctx, min(c.o.Every, time.Second))
	_ = c.Measure(first) // failure: Trusted says unknown until a measurement succeeds
	cancelFirst()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // owned by stop
		defer close(done)
		c.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// run measures every Every until ctx ends, and every retryEvery while the offset is not trusted,
// so that writes resume soon after Redis is back or its round trips are short again. Each
// measurement gets at most Every.
func (c *Clock) run(ctx context.Context) {
	t := time.NewTimer(c.next())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m, cancel := context.WithTimeout(ctx, c.o.Every)
			_ = c.Measure(m)
			cancel()
			t.Reset(c.next())
		}
	}
}

// retryEvery is how often an untrusted offset is measured again.
const retryEvery = 250 * time.Millisecond

// next is how long to wait for the next measurement.
func (c *Clock) next() time.Duration {
	if c.Trusted() != nil {
		return min(c.o.Every, retryEvery)
	}
	return c.o.Every
}

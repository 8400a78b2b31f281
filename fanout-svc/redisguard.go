package main

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/pkg/serve"
)

// guardProbeInterval is how often the guard pings Redis.
const guardProbeInterval = time.Second

// guardLostAfter is how many probes in a row must fail before the node counts Redis as lost and
// refuses new streams: one ping that times out while a connect burst fills the Redis pool is load,
// not a partition.
const guardLostAfter = 3

// redisGuard watches whether this node reaches Redis. A node cut off from Redis hears no
// updates, so its viewers would sit on old counts while the other nodes have them right.
// Readiness fails at once (it pings Redis), so the balancer sends new streams elsewhere, and the
// guard refuses new streams itself; once Redis has been unreachable for the grace period the
// guard sheds the node's viewers over the drain window, so they reconnect through the balancer
// to nodes that reach Redis. The node keeps running: when Redis answers again it stops shedding,
// the relay resubscribes and re-reads every post (go-redis reconnects the pub/sub connection),
// readiness passes and the balancer sends viewers back.
//
// If Redis is down for every node at once, every node sheds after the grace: the viewers come
// back as soon as Redis does. REDIS_GRACE should exceed a Redis restart or failover; 0 never
// sheds.
type redisGuard struct {
	ping    func(context.Context) error
	shed    func(window time.Duration) // hub.Shed
	keep    func()                     // hub.StopShedding
	grace   time.Duration
	window  time.Duration
	timeout time.Duration
	log     *zap.Logger

	lost  atomic.Bool  // guardLostAfter probes in a row failed, and none has succeeded since
	sheds atomic.Int64 // times the node shed its viewers
}

// run probes Redis every guardProbeInterval until ctx is done.
func (g *redisGuard) run(ctx context.Context) {
	t := time.NewTicker(guardProbeInterval)
	defer t.Stop()
	var since time.Time // first failed probe of the current run of failures
	fails := 0          // probes failed in a row
	shed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, g.timeout)
		err := g.ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if fails == 0 {
				since = time.Now()
			}
			fails++
			if fails < guardLostAfter {
				continue
			}
		} else {
			fails = 0
		}
		switch {
		case err == nil && g.lost.Load():
			g.lost.Store(false)
			if shed {
				g.keep()
			}
			g.log.Info("redis reachable again; resubscribing", zap.Duration("lost_for", time.Since(since)), zap.Bool("shed", shed))
			shed = false
		case err == nil:
		case !g.lost.Load():
			g.lost.Store(true)
			g.log.Warn("redis unreachable; refusing new streams", zap.Error(err), zap.Duration("shed_after", g.grace))
		case !shed && g.grace > 0 && time.Since(since) >= g.grace:
			shed = true
			g.sheds.Add(1)
			g.log.Warn("redis unreachable past the grace period; moving viewers to other nodes",
				zap.Error(err), zap.Duration("window", g.window))
			g.shed(g.window)
		}
	}
}

// refuseWhileLost answers 503 with a short Retry-After while Redis is unreachable, so that a
// viewer shed by this node, or one that reaches it without the balancer, goes to another node
// instead of settling here on a count that no longer changes.
func (g *redisGuard) refuseWhileLost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.lost.Load() {
			stream.AllowCrossOrigin(w.Header())
			serve.Unavailable(w, time.Second, "redis unreachable from this node; try another node")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// register exposes the guard's state on /metrics.
func (g *redisGuard) register(reg *prometheus.Registry) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "likes_fanout_redis_reachable", Help: "1 while the node's Redis probe succeeds, 0 while it fails.",
	}, func() float64 {
		if g.lost.Load() {
			return 0
		}
		return 1
	}))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "likes_fanout_redis_sheds_total", Help: "Times the node shed its viewers after losing Redis for REDIS_GRACE.",
	}, func() float64 { return float64(g.sheds.Load()) }))
}

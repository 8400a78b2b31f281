package main

import (
	"golang.org/x/sys/unix"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/fanout-svc/internal/relay"
	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/fanout-svc/internal/watching"
)

// registerMetrics exposes the hub's, relay's and handler's counters. They are read at scrape time
// from atomics the engine keeps anyway, so metrics add nothing to the fan-out path.
func registerMetrics(reg *prometheus.Registry, h *hub.Hub, p *posts.Registry, rel *relay.Relay, streams *stream.Handler) {
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	hs, rs := h.Stats(), rel.Stats()
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	gauge("likes_fanout_viewers", "Connected viewers.", func() float64 { return float64(hs.Viewers.Load()) })
	gauge("likes_fanout_subscriptions", "Posts this node has viewers of or keeps in their grace period: subscribed, or waiting to exist (likes_fanout_waiting_posts).", func() float64 { return float64(p.Subscriptions()) })
	counter("likes_fanout_updates_total", "Updates accepted from Redis.", func() float64 { return float64(hs.Updates.Load()) })
	counter("likes_fanout_updates_stale_total", "Updates dropped as older than the node's newest.", func() float64 { return float64(hs.Stale.Load()) })
	counter("likes_fanout_events_sent_total", "Event frames handed to viewer sockets.", func() float64 { return float64(hs.FramesSent.Load()) })
	counter("likes_fanout_events_conflated_total", "Frames replaced by a newer one before a slow viewer could take them.", func() float64 { return float64(hs.Conflated.Load()) })
	counter("likes_fanout_display_held_total", "Frames a post's viewers were not shown because its display rate (POST_RATE_LIMIT, DISPLAY_BUDGET) sent a newer one at its next turn; part of likes_fanout_events_conflated_total.",
		func() float64 { return float64(hs.DisplayHeld.Load()) })
	counter("likes_fanout_writes_total", "write(2) calls to viewer sockets.", func() float64 { return float64(hs.Writes.Load()) })
	counter("likes_fanout_bytes_written_total", "Bytes written to viewer sockets.", func() float64 { return float64(hs.BytesWritten.Load()) })
	counter("likes_fanout_write_errors_total", "Viewers dropped on a write error.", func() float64 { return float64(hs.WriteErrors.Load()) })
	counter("likes_fanout_disconnects_total", "Viewers gone.", func() float64 { return float64(hs.Disconnects.Load()) })
	counter("likes_fanout_stalled_total", "Viewers dropped because their socket did not drain in time.", func() float64 { return float64(hs.Stalled.Load()) })
	counter("likes_fanout_heartbeats_total", "Heartbeat comments sent.", func() float64 { return float64(hs.Heartbeats.Load()) })
	counter("likes_fanout_viewer_panics_total", "Panics recovered while an event loop served one viewer (a write, a heartbeat, its socket's events, its removal); that viewer was closed, every other kept.",
		func() float64 { return float64(hs.Panics.Load()) })
	counter("likes_fanout_refused_total", "Viewers refused because the node or their address was full.", func() float64 { return float64(streams.Refused.Load()) })
	counter("likes_fanout_pubsub_messages_total", "Pub/sub messages received.", func() float64 { return float64(rs.Messages.Load()) })
	counter("likes_fanout_redis_errors_total", "Redis receive, subscribe and snapshot errors.", func() float64 { return float64(rs.RedisErrors.Load()) })
	counter("likes_fanout_resyncs_total", "Posts re-read after a resubscription.", func() float64 { return float64(rs.Resyncs.Load()) })
	counter("likes_fanout_resubscribes_total", "Resubscriptions after a lost pub/sub connection or a moved slot.", func() float64 { return float64(rs.Reconnects.Load()) })
	counter("likes_fanout_slot_reroutes_total", "Redis Cluster slots whose subscriptions moved to another node.", func() float64 { return float64(rs.Reroutes.Load()) })
	gauge("likes_fanout_waiting_posts", "Posts with viewers here that do not exist yet (no like or reaction): no Redis subscription, no watching key; the node waits for their creation on the creations channel.",
		func() float64 { return float64(rel.Waiting()) })
	counter("likes_fanout_creations_heard_total", "Post creations heard on the creations channel, any post's.", func() float64 { return float64(rs.Created.Load()) })
	counter("likes_fanout_waiting_posts_activated_total", "Waiting posts subscribed once they came to exist.", func() float64 { return float64(rs.Activated.Load()) })
	reg.MustRegister(deliveryCollector{d: &hs.Delivery})
}

// registerConnectionCap exposes the viewers this node can hold, so LikesNodeNearConnectionCap
// divides by the node's real figure rather than guessing it from process_max_fds: MAX_CONNS,
// or the open-file limit minus fdHeadroom when that is lower (past it accept() fails with EMFILE
// before the handler's 503 would).
func registerConnectionCap(reg *prometheus.Registry, maxConns int) {
	limit := connectionCap(maxConns)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "likes_fanout_connection_cap",
		Help: "Viewers this node can hold: MAX_CONNS, or the open-file limit minus headroom when lower."},
		func() float64 { return float64(limit) }))
}

// connectionCap is min(maxConns, open-file limit minus fdHeadroom); maxConns when the limit is
// unknown or unlimited.
func connectionCap(maxConns int) int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return maxConns
	}
	return min(maxConns, max(int(lim.Cur)-fdHeadroom, 1))
}

// deliveryDesc describes the node's delivery histogram (hub.Delivery says what it measures).
var deliveryDesc = prometheus.NewDesc("likes_fanout_delivery_seconds",
	"Seconds from a change stored in Redis to its frame written to this node's viewers, per post per write pass.", nil, nil)

// deliveryCollector exposes hub.Delivery, which the loops keep in atomics of their own (a
// prometheus.Histogram would be an Observe per post on the hot path), as a histogram.
type deliveryCollector struct{ d *hub.Delivery }

func (c deliveryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deliveryDesc }

func (c deliveryCollector) Collect(ch chan<- prometheus.Metric) {
	count, sum, buckets := c.d.Snapshot()
	ch <- prometheus.MustNewConstHistogram(deliveryDesc, count, sum, buckets)
}

// registerWatchingMetrics exposes what "watching now" costs: numbers added to Redis (what a ramp
// divides Redis's CPU by), failed round trips, and what reached viewers. counter is nil when the
// feature is off; the hub's counters are there either way.
func registerWatchingMetrics(reg *prometheus.Registry, h *hub.Hub, counter *watching.Counter) {
	hs := h.Stats()
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "likes_fanout_watching_updates_total",
			Help: "Changed watching numbers accepted by the hub."}, func() float64 { return float64(hs.WatchingUpdates.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "likes_fanout_watching_sent_total",
			Help: "Watching frames handed to viewer sockets."}, func() float64 { return float64(hs.WatchingSent.Load()) }))
	if counter == nil {
		return
	}
	cs := counter.Stats()
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "likes_fanout_watching_reports_total",
			Help: "Per-post viewer numbers this node added to Redis (one per post with local viewers per interval)."},
			func() float64 { return float64(cs.Reports.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "likes_fanout_watching_errors_total",
			Help: "Watching round trips to Redis that failed."}, func() float64 { return float64(cs.Errors.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "likes_fanout_watching_posts",
			Help: "Posts with local viewers at the last watching interval."}, func() float64 { return float64(cs.Posts.Load()) }))
}

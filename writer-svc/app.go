package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/writer-svc/internal/ackquorum"
	"github.com/likes/likes/writer-svc/internal/auth"
	"github.com/likes/likes/writer-svc/internal/batch"
	"github.com/likes/likes/writer-svc/internal/likeapi"
	"github.com/likes/likes/writer-svc/internal/ratelimit"
	"github.com/likes/likes/writer-svc/internal/redisclock"
	"github.com/likes/likes/writer-svc/internal/session"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/timeline"
	"github.com/likes/likes/writer-svc/internal/userlikes"
)

// metricsNamespace prefixes every writer metric.
const metricsNamespace = "likes_writer"

// app is writer-svc assembled: the Redis client it owns and the HTTP handler.
type app struct {
	rdb      redis.UniversalClient
	store    *store.Store
	sessions *session.Issuer  // nil when sessions are off
	changes  *batch.Coalescer // nil until built
	handler  http.Handler
	// stopNames stops the re-resolution of TRUSTED_PROXIES' host names.
	stopNames func()
	// stopClock stops the measurement of Redis' clock (redisclock).
	stopClock func()
	// stopQuorum stops asking the Sentinels which replicas are down (ackquorum; REDIS_ACK_REPLICAS
	// all), and closes its clients; nil when not asked.
	stopQuorum func()
}

// newApp builds the writer from cfg. Anything started in the background (the JWKS refresh, the
// re-resolution of TRUSTED_PROXIES' names) belongs to ctx. The caller closes the app.
func newApp(ctx context.Context, cfg Config, log *zap.Logger) (*app, error) {
	rdb, err := redisconn.New(cfg.Redis)
	if err != nil {
		return nil, err
	}
	// TRUSTED_PROXIES' host names: resolved now, then again in a goroutine that close stops.
	a := &app{rdb: rdb, stopNames: cfg.Clients.Start(ctx, log.Named("trusted-proxies"))}
	// Redis' clock against this writer's: measured now, then again in a goroutine that close
	// stops. The store sends each batch's cutoff on Redis' clock with it.
	clock := redisclock.New(rdb, redisclock.Options{MaxUncertainty: cfg.ClockUncertaintyMax})
	a.stopClock = clock.Start(ctx)
	keys := rediskeys.New(cfg.Redis.KeyPrefix)
	var acks func() int
	if cfg.AckAll {
		if acks, err = a.startQuorum(ctx, cfg); err != nil {
			a.close()
			return nil, err
		}
	}
	a.store = store.New(rdb, keys, store.Options{
		Cluster: cfg.Redis.Cluster(), AckReplicas: cfg.AckReplicas, Acks: acks, IndexGrace: indexGrace(cfg),
		ReactionInterval: cfg.ReactionInterval, TimelineRetention: cfg.TimelineRetention,
		ClockOffset: clock.Offset, EmptyPostTTL: cfg.EmptyPostTTL, ReadBarrierGap: cfg.ReadBarrierGap,
	})
	if cfg.Session.Enabled {
		if a.sessions, err = session.New(rdb, keys, cfg.Session.Options, log); err != nil {
			a.close()
			return nil, err
		}
	}
	identify, site, err := newIdentifier(ctx, cfg.Auth, a.sessions, log)
	if err != nil {
		a.close()
		return nil, err
	}
	admin, err := auth.NewAdmin(cfg.Auth.AdminToken, site, cfg.Auth.AdminRole)
	if err != nil {
		a.close()
		return nil, err
	}
	var limit likeapi.Limiter
	var limiter *ratelimit.Limiter
	if !cfg.LikeRate.Off() {
		limiter = ratelimit.New(rdb, keys, cfg.LikeRate)
		limit = limiter
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector(),
		redisMemoryCollector{rdb: rdb})
	metrics := likeapi.NewMetrics(reg, metricsNamespace)
	clock.Register(reg, metricsNamespace)
	a.changes, err = batch.New(a.store, batch.Options{
		Window: cfg.BatchWindow, Size: cfg.BatchSize, Timeout: cfg.RequestTimeout,
	}, batch.NewMetrics(reg, metricsNamespace))
	if err != nil {
		a.close()
		return nil, err
	}
	o := likeapi.Options{
		Store: a.store, Changes: a.changes, Identify: identify, Limit: limit, LimitPerPost: cfg.LikeRatePerPost,
		Clients: cfg.Clients, Metrics: metrics, Log: log, Timeout: cfg.RequestTimeout,
		Index: userlikes.NewIndex(rdb, keys, userlikes.IndexOptions{
			Cluster: cfg.Redis.Cluster(), Grace: indexGrace(cfg), Unlike: a.changes,
		}),
		Reader: userlikes.NewReader(rdb, keys, cfg.MaxReadPosts),
		Admin:  admin, EraseTimeout: eraseTimeout(cfg),
		ReactionKinds: cfg.ReactionKinds,
	}
	var addrLimiter *ratelimit.Limiter
	if !cfg.LikeAddrRate.Off() {
		addrLimiter = ratelimit.NewNamed(rdb, keys.LikeAddrRate, cfg.LikeAddrRate)
		o.AddrLimit = addrLimiter
	}
	if !cfg.NewPostRate.Off() {
		o.NewPostLimit = ratelimit.NewNamed(rdb, keys.NewPostRate, cfg.NewPostRate)
	}
	if !cfg.NewPostAddrRate.Off() {
		o.NewPostAddrLimit = ratelimit.NewNamed(rdb, keys.NewPostRate, cfg.NewPostAddrRate)
	}
	if !cfg.UserDataAddrRate.Off() {
		o.DataAddrLimit = ratelimit.NewNamed(rdb, keys.DataAddrRate, cfg.UserDataAddrRate)
	}
	if !cfg.ReadAddrRate.Off() {
		o.ReadAddrLimit = ratelimit.NewLocal(cfg.ReadAddrRate) // in this process: a read writes nothing to Redis
	}
	likes := likeapi.NewHandler(o)
	timelines := timeline.NewHandler(timeline.Options{
		Reader: timeline.NewReader(rdb, keys, cfg.ReactionKinds), Limit: o.DataAddrLimit, Clients: cfg.Clients,
		Timeout: cfg.RequestTimeout,
	})
	warmUp(ctx, a.store, cmp.Or(limiter, addrLimiter), a.sessions, log) // both run one script
	a.handler = newRouter(routerDeps{
		log: log, registry: reg, ready: a.store.Ping, likes: likes, corsOrigins: cfg.CORSOrigins, allowedOrigins: cfg.AllowedOrigins,
		timelines:  timelines,
		sessions:   newSessionHandler(cfg, a.sessions, rdb, keys, reg, log),
		writeGuard: clockGuard(clock.Trusted, time.Second),
	})
	return a, nil
}

// indexGrace is how long a like may still land after its index entry was written (the longest
// a like request takes, and a second of margin): store.Options.IndexGrace.
func indexGrace(cfg Config) time.Duration { return cfg.RequestTimeout + time.Second }

// minClusterWriteTimeout is the shortest WRITE_TIMEOUT that lets an erasure of a user's likes on
// a Cluster answer: it waits out indexGrace before its last pass, which takes up to a second more,
// and eraseTimeout keeps a second to write the response. Shorter, every DELETE /me/likes would
// remove the likes and still answer 503, the retries too.
func minClusterWriteTimeout(cfg Config) time.Duration { return indexGrace(cfg) + 2*time.Second }

// eraseTimeout bounds an erasure of a user's likes: as long as the response may take to write,
// less a second to write it in (30 s when writes have no timeout).
func eraseTimeout(cfg Config) time.Duration {
	if cfg.Serve.WriteTimeout <= 0 {
		return 30 * time.Second
	}
	return max(cfg.Serve.WriteTimeout-time.Second, cfg.RequestTimeout)
}

// newSessionHandler returns the session API, or nil when sessions are off. Its issue rate is
// counted in Redis, so a client balanced over every replica gets one allowance, not one each.
func newSessionHandler(cfg Config, issuer *session.Issuer, rdb redis.UniversalClient, keys rediskeys.Scheme,
	reg prometheus.Registerer, log *zap.Logger) *session.Handler {
	if issuer == nil {
		return nil
	}
	o := session.HandlerOptions{
		Issuer: issuer, Clients: cfg.Clients,
		Metrics: session.NewMetrics(reg, metricsNamespace), Log: log, Timeout: cfg.RequestTimeout,
	}
	if !cfg.Session.Rate.Off() {
		o.Limit = ratelimit.NewNamed(rdb, keys.SessionRate, cfg.Session.Rate)
	}
	if !cfg.Session.RefreshRate.Off() {
		o.RefreshLimit = ratelimit.NewNamed(rdb, keys.SessionRefreshRate, cfg.Session.RefreshRate)
	}
	return session.NewHandler(o)
}

// close waits for the batches still in flight (the HTTP server has stopped by then), then closes
// the Redis client they use.
func (a *app) close() error {
	a.stopNames()
	a.stopClock()
	if a.stopQuorum != nil {
		a.stopQuorum()
	}
	if a.changes != nil {
		a.changes.Close()
	}
	if a.store != nil {
		a.store.Close() // its read barriers use the client: stopped before it closes
	}
	if a.sessions != nil {
		a.sessions.Close()
	}
	return a.rdb.Close()
}

// startQuorum starts asking the Sentinels which replicas are down, for REDIS_ACK_REPLICAS=all,
// and returns how many replicas a batch then waits for.
func (a *app) startQuorum(ctx context.Context, cfg Config) (func() int, error) {
	sentinels, master, err := redisconn.NewSentinels(cfg.Redis)
	if err != nil {
		return nil, err
	}
	q := ackquorum.New(sentinels, master, a.rdb, ackquorum.Options{})
	stop := q.Start(ctx)
	a.stopQuorum = func() {
		stop()
		for _, s := range sentinels {
			_ = s.Close()
		}
	}
	return q.Replicas, nil
}

// warmUp checks Redis and loads the scripts. Failure is logged, not fatal: the writer starts
// unready (/readyz says 503) and serves as soon as Redis is back, and the scripts load themselves
// through go-redis' EVAL fallback. That keeps start order free in Compose and Kubernetes.
// The first writer to start creates the session signing key here.
func warmUp(ctx context.Context, st *store.Store, limiter *ratelimit.Limiter, sessions *session.Issuer, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := st.Ping(ctx)
	if err == nil {
		err = st.Load(ctx)
	}
	if err == nil && limiter != nil {
		err = limiter.Load(ctx)
	}
	if err == nil && sessions != nil {
		err = sessions.Load(ctx)
	}
	if err != nil {
		log.Warn("redis not ready at start; serving 503 until it is", zap.Error(err))
	}
}

// newIdentifier returns the configured way to tell who a request acts for (auth.Chain's modes):
// the site's JWTs when configured, else X-User-ID when trusted, else session tokens only; session
// tokens are accepted besides in every mode when sessions is not nil. The single-verifier cases
// skip the chain. loadConfig has already refused the contradictory and the empty configurations.
func newIdentifier(ctx context.Context, cfg AuthConfig, sessions *session.Issuer, log *zap.Logger) (auth.Identifier, *auth.Token, error) {
	chain := auth.Chain{TrustHeader: cfg.TrustUserHeader}
	if sessions != nil {
		chain.Sessions = sessions
	}
	if !cfg.Enabled() {
		if cfg.TrustUserHeader {
			log.Warn("TRUST_USER_HEADER: trusting the X-User-ID header; expose only behind a gateway that sets it")
			if sessions == nil {
				return auth.Header{}, nil, nil
			}
		}
		return chain, nil, nil
	}
	o := auth.TokenOptions{Audience: cfg.Audience, Issuer: cfg.Issuer}
	if cfg.JWTSecret != "" {
		o.Secret = []byte(cfg.JWTSecret)
	}
	if cfg.JWKSURL != "" {
		keys, err := auth.NewJWKS(ctx, auth.JWKSOptions{URL: cfg.JWKSURL, Refresh: cfg.JWKSRefresh}, log)
		if err != nil {
			return nil, nil, err
		}
		o.Keys = keys
	}
	t, err := auth.NewToken(o)
	if err != nil {
		return nil, nil, fmt.Errorf("token auth: %w", err)
	}
	if sessions == nil {
		return t, t, nil
	}
	chain.Site = t
	return chain, t, nil
}

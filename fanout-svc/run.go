package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/fanout-svc/internal/relay"
	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/fanout-svc/internal/watching"
	"github.com/likes/likes/fanout-svc/internal/web"
	"github.com/likes/likes/pkg/logging"
	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/runtimelimits"
	"github.com/likes/likes/pkg/serve"
)

// run starts a fanout node and serves until ctx is done or SIGINT/SIGTERM arrives. Shutdown goes
// in steps: new streams are refused and readiness fails, then the HTTP server stops (the listener
// closes, and streams still in setup, on net/http or the fast accept loop, finish), then viewers are closed spread over the drain window
// (they reconnect to other nodes), then Redis is let go.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := loadConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log, err := logging.New("fanout-svc", cfg.LogLevel, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	raiseFileLimit(log)
	runtimelimits.Apply(log)

	client, err := redisconn.New(cfg.Redis)
	if err != nil {
		return err
	}
	defer client.Close()
	pctx, cancel := context.WithTimeout(ctx, cfg.Redis.Timeout)
	if err := client.Ping(pctx).Err(); err != nil {
		log.Warn("redis not reachable at start; will keep trying", zap.Error(err))
	}
	cancel()

	keys := rediskeys.New(cfg.Redis.KeyPrefix)
	rel := relay.New(client, keys, log.Named("relay"))
	hcfg := cfg.Hub
	hcfg.SendBuffer = 0 // set once on the listener, which every viewer socket inherits (listen)
	h, err := hub.New(hcfg, rel, log.Named("hub"))
	if err != nil {
		return err
	}
	stopNames := cfg.Stream.Clients.Start(ctx, log.Named("trusted-proxies")) // TRUSTED_PROXIES' host names
	defer stopNames()
	streams := stream.New(cfg.Stream, h, rel, log.Named("stream"))
	counter, err := newWatching(cfg.Watching, client, keys, h, log.Named("watching"))
	if err != nil {
		return err
	}

	guard := &redisGuard{
		ping: func(ctx context.Context) error { return redisconn.Ping(ctx, client) }, shed: h.Shed, keep: h.StopShedding,
		grace: cfg.RedisGrace, window: cfg.DrainWindow, timeout: cfg.Redis.Timeout, log: log.Named("redis-guard"),
	}
	relayCtx, stopRelay := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if counter != nil {
		wg.Add(1)
		go func() { // exits when stopRelay is called
			defer wg.Done()
			counter.Run(relayCtx)
		}()
	}
	wg.Add(3)
	go func() { // exits when stopRelay is called; a shed after the hub closed does nothing
		defer wg.Done()
		guard.run(relayCtx)
	}()
	go func() { // exits when stopRelay is called
		defer wg.Done()
		releaseIdleMemory(relayCtx, h.Admitted)
	}()
	go func() { // exits when stopRelay is called, after the hub is closed
		defer wg.Done()
		rel.Run(relayCtx, h)
	}()
	defer func() {
		h.Close()
		stopRelay()
		wg.Wait()
	}()

	reg := prometheus.NewRegistry()
	registerMetrics(reg, h, rel, streams)
	registerConnectionCap(reg, cfg.Stream.MaxConns)
	registerWatchingMetrics(reg, h, counter)
	guard.register(reg)
	metrics := serve.NewRequestMetrics(reg, "likes_fanout")
	router := newRouter(cfg, log, reg, metrics, streams, guard, func(ctx context.Context) error {
		if streams.Draining() {
			return errors.New("draining")
		}
		return redisconn.Ping(ctx, client)
	})

	inner, err := listen(cfg.Serve, cfg.Hub.SendBuffer)
	if err != nil {
		return err
	}
	ln, err := fastListen(inner, h, cfg.Serve, streams, guard, metrics, reg, log.Named("fast"))
	if err != nil {
		return err
	}
	srv := serve.NewServer(cfg.Serve, router, log)
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.Int("loops", h.Loops()),
		zap.Int("max_conns", cfg.Stream.MaxConns), zap.Duration("flush_window", cfg.Hub.FlushWindow),
		zap.Float64("post_rate", cfg.Hub.PostRate), zap.Float64("display_budget", cfg.Hub.DisplayBudget), zap.Bool("cluster", cfg.Redis.Cluster()),
		zap.String("redis_mode", cfg.Redis.Mode()))

	// The server stops on its own context, cancelled only after new streams are refused, so that
	// no stream is admitted once shutdown has begun.
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	go func() { // exits when ctx is done or run returns
		select {
		case <-ctx.Done():
			streams.SetDraining()
			stopServing()
		case <-serveCtx.Done():
		}
	}()
	err = serve.Serve(serveCtx, srv, ln, cfg.Serve.ShutdownTimeout)
	_ = ln.Close() // closed already by a shutdown; not if the server failed
	ln.Wait()      // streams the fast path is still setting up reach the hub before the drain
	dctx, dcancel := context.WithTimeout(context.Background(), cfg.DrainWindow+5*time.Second)
	h.Drain(dctx, cfg.DrainWindow)
	dcancel()
	log.Info("stopped", zap.Error(err))
	return err
}

func newRouter(cfg config, log *zap.Logger, reg *prometheus.Registry, metrics *serve.RequestMetrics, streams *stream.Handler, guard *redisGuard, ready func(context.Context) error) http.Handler {
	r := chi.NewRouter()
	r.NotFound(serve.NotFound)
	r.MethodNotAllowed(serve.MethodNotAllowed)
	r.Use(metrics.Middleware, serve.Recover(log))
	serve.Health(r, ready)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	r.Group(func(r chi.Router) {
		r.Use(guard.refuseWhileLost)
		streams.Routes(r)
	})
	page := web.Handler(cfg.Page)
	r.Handle("/", page)
	r.Handle(web.AssetPrefix+"*", page)
	r.Handle(web.ClientDir+"*", page)
	return r
}

// newWatching returns the "watching now" counter, or nil when the interval is 0 (off). It shares
// the node's Redis client: a few pipelined commands per post and interval.
func newWatching(cfg watching.Config, client redis.UniversalClient, keys rediskeys.Scheme, h *hub.Hub, log *zap.Logger) (*watching.Counter, error) {
	if cfg.Interval <= 0 {
		return nil, nil
	}
	return watching.New(cfg, client, keys, h, h, log)
}

// raiseFileLimit lifts the soft open-file limit to the hard one: every viewer is a descriptor.
func raiseFileLimit(log *zap.Logger) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= lim.Max {
		return
	}
	lim.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("raise open-file limit", zap.Error(err))
	}
}

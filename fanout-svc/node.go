package main

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/fanout-svc/internal/fastaccept"
	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/fanout-svc/internal/relay"
	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/fanout-svc/internal/watching"
	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/update"
)

// node is fanout-svc assembled: the Redis client it owns, the relay that subscribes it to posts,
// the registry of posts with local viewers and their subscriptions, the hub that fans their
// updates out to viewers, the stream endpoint, the Redis guard, the
// "watching now" counter and the HTTP handler. newNode builds it, Start runs its background
// work, Listen and Serve take viewers, Close stops everything.
//
// The relay hands every update to the node (Publish), which hands it to the hub: the relay is
// built first, the registry, which subscribes through the relay, and the hub after it, and the
// relay publishes only once Start runs it.
type node struct {
	cfg     config
	log     *zap.Logger
	client  redis.UniversalClient
	relay   *relay.Relay
	posts   *posts.Registry
	hub     *hub.Hub
	streams *stream.Handler
	counter *watching.Counter // nil when watching is off
	guard   *redisGuard
	reg     *prometheus.Registry
	metrics *serve.RequestMetrics
	handler http.Handler

	// stopNames stops the re-resolution of TRUSTED_PROXIES' host names.
	stopNames func()
	// stop ends what Start started; nil before Start.
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// newNode builds the node from cfg. The re-resolution of TRUSTED_PROXIES' names belongs to ctx.
// The caller closes the node.
func newNode(ctx context.Context, cfg config, log *zap.Logger) (*node, error) {
	client, err := redisconn.New(cfg.Redis)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Redis.Timeout)
	if err := client.Ping(pctx).Err(); err != nil {
		log.Warn("redis not reachable at start; will keep trying", zap.Error(err))
	}
	cancel()

	n := &node{cfg: cfg, log: log, client: client}
	keys := rediskeys.New(cfg.Redis.KeyPrefix)
	n.relay = relay.New(client, keys, n, log.Named("relay"))
	n.posts = posts.New(cfg.Posts, n.relay)
	hcfg := cfg.Hub
	hcfg.SendBuffer = 0 // set once on the listener, which every viewer socket inherits (listen)
	if n.hub, err = hub.New(hcfg, n.posts, log.Named("hub")); err != nil {
		n.posts.Close()
		_ = client.Close()
		return nil, err
	}
	n.stopNames = cfg.Stream.Clients.Start(ctx, log.Named("trusted-proxies")) // TRUSTED_PROXIES' host names
	n.streams = stream.New(cfg.Stream, n.hub, n.posts, n.relay, log.Named("stream"))
	if cfg.Watching.Interval > 0 { // 0: off
		// It shares the node's Redis client: a few pipelined commands per post and interval.
		if n.counter, err = watching.New(cfg.Watching, client, keys, n.posts, n.hub, log.Named("watching")); err != nil {
			n.Close()
			return nil, err
		}
	}
	n.guard = &redisGuard{
		ping: func(ctx context.Context) error { return redisconn.Ping(ctx, client) }, shed: n.hub.Shed, keep: n.hub.StopShedding,
		grace: cfg.RedisGrace, window: cfg.DrainWindow, timeout: cfg.Redis.Timeout, log: log.Named("redis-guard"),
	}

	n.reg = prometheus.NewRegistry()
	registerMetrics(n.reg, n.hub, n.posts, n.relay, n.streams)
	registerConnectionCap(n.reg, cfg.Stream.MaxConns)
	registerWatchingMetrics(n.reg, n.hub, n.counter)
	n.guard.register(n.reg)
	n.metrics = serve.NewRequestMetrics(n.reg, "likes_fanout")
	n.handler = newRouter(cfg, log, n.reg, n.metrics, n.streams, n.guard, n.ready)
	return n, nil
}

// Publish hands an update the relay received to the hub (relay.Sink).
func (n *node) Publish(u update.Update) { n.hub.Publish(u) }

// ready is the readiness probe: a draining node, or one that does not reach Redis, takes no new
// streams.
func (n *node) ready(ctx context.Context) error {
	if n.streams.Draining() {
		return errors.New("draining")
	}
	return redisconn.Ping(ctx, n.client)
}

// Start runs the node's background work until Close: the relay's pub/sub connections, the Redis
// guard, the "watching now" counter and the release of idle memory.
func (n *node) Start() {
	ctx, stop := context.WithCancel(context.Background())
	n.stop = stop
	if n.counter != nil {
		n.wg.Add(1)
		go func() { // exits when Close calls stop
			defer n.wg.Done()
			n.counter.Run(ctx)
		}()
	}
	n.wg.Add(3)
	go func() { // exits when Close calls stop; a shed after the hub closed does nothing
		defer n.wg.Done()
		n.guard.run(ctx)
	}()
	go func() { // exits when Close calls stop
		defer n.wg.Done()
		releaseIdleMemory(ctx, n.hub.Admitted)
	}()
	go func() { // exits when Close calls stop, after the hub is closed
		defer n.wg.Done()
		n.relay.Run(ctx)
	}()
}

// Listen opens the node's listener and puts the fast accept path in front of it: the hub's loops
// accept stream connects themselves (fastListen); everything else reaches the returned listener's
// net/http side.
func (n *node) Listen() (*fastaccept.Listener, error) {
	inner, err := listen(n.cfg.Serve, n.cfg.Hub.SendBuffer)
	if err != nil {
		return nil, err
	}
	ln, err := fastListen(inner, n.cfg.Serve, n.cfg.MaxHTTPConns, n.streams, n.guard, n.metrics, n.reg, n.log.Named("fast"))
	if err != nil {
		return nil, err
	}
	n.hub.Listen(loopAcceptor{ln})
	return ln, nil
}

// Serve serves ln until ctx is done, then shuts down in steps: new streams are refused and
// readiness fails, then the HTTP server stops (the listener closes, and streams still in setup,
// on net/http or the fast accept loop, finish), then viewers are closed spread over the drain
// window (they reconnect to other nodes). Close then lets Redis go.
func (n *node) Serve(ctx context.Context, ln *fastaccept.Listener) error {
	srv := serve.NewServer(n.cfg.Serve, n.handler, n.log)
	srv.ConnState = releaseOnClose(ln)
	// The server stops on its own context, cancelled only after new streams are refused, so that
	// no stream is admitted once shutdown has begun.
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	go func() { // exits when ctx is done or Serve returns
		select {
		case <-ctx.Done():
			n.streams.SetDraining()
			stopServing()
		case <-serveCtx.Done():
		}
	}()
	err := serve.Serve(serveCtx, srv, ln, n.cfg.Serve.ShutdownTimeout)
	_ = ln.Close() // closed already by a shutdown; not if the server failed
	ln.Wait()      // streams the fast path is still setting up reach the hub before the drain
	dctx, dcancel := context.WithTimeout(context.Background(), n.cfg.DrainWindow+5*time.Second)
	n.hub.Drain(dctx, n.cfg.DrainWindow)
	dcancel()
	return err
}

// Close stops the hub (closing every viewer still there), then the subscriptions in flight and
// the background work, then lets go of Redis.
func (n *node) Close() {
	n.hub.Close()
	n.posts.Close()
	if n.stop != nil {
		n.stop()
		n.wg.Wait()
	}
	n.stopNames()
	_ = n.client.Close()
}

// loopAcceptor lets the hub's loops accept from a fastaccept.Listener (hub.Acceptor).
type loopAcceptor struct{ l *fastaccept.Listener }

func (a loopAcceptor) Attach(p *epoll.Poller, wake func(), home any) (hub.Intake, error) {
	in, err := a.l.Attach(p, wake, home)
	if err != nil {
		return nil, err // not a nil *Intake in a non-nil interface
	}
	return in, nil
}

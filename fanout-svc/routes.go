package main

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/fanout-svc/internal/web"
	"github.com/likes/likes/pkg/openapi"
	"github.com/likes/likes/pkg/serve"
)

// newRouter is the node's HTTP handler: the health probes, /metrics, its OpenAPI document
// (pkg/openapi), the streams (refused while the Redis guard counts Redis as lost) and the page with
// its assets and the client library.
func newRouter(cfg config, log *zap.Logger, reg *prometheus.Registry, metrics *serve.RequestMetrics, streams *stream.Handler, guard *redisGuard, ready func(context.Context) error) http.Handler {
	r := chi.NewRouter()
	r.NotFound(serve.NotFound)
	r.MethodNotAllowed(serve.MethodNotAllowed)
	r.Use(metrics.Middleware, serve.Recover(log))
	serve.Health(r, ready)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	r.Method(http.MethodGet, openapi.Path, openapi.Handler(openapi.Fanout()))
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

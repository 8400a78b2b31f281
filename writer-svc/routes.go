package main

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/cors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/openapi"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/writer-svc/internal/likeapi"
	"github.com/likes/likes/writer-svc/internal/session"
	"github.com/likes/likes/writer-svc/internal/timeline"
)

// routerDeps are what the router serves.
type routerDeps struct {
	log         *zap.Logger
	registry    *prometheus.Registry
	ready       func(context.Context) error
	likes       *likeapi.Handler
	timelines   *timeline.Handler
	sessions    *session.Handler // nil when sessions are off
	corsOrigins []string
	// allowedOrigins may change likes and sessions from a browser (originGuard)
	allowedOrigins []string
	// writeGuard, when set, wraps the like routes that run the like script (clockGuard)
	writeGuard func(http.Handler) http.Handler
}

// maxBody bounds a request's body: the API's are a small JSON object or none.
const maxBody = 64 << 10

// corsMaxAge lets browsers cache a preflight answer for ten minutes.
const corsMaxAge = 600

// newRouter returns the writer's HTTP handler. Metrics wrap recovery so a recovered panic is
// counted as the 500 it became; CORS answers preflights before routing, because chi would
// otherwise reply 405 to an OPTIONS request.
func newRouter(d routerDeps) http.Handler {
	r := chi.NewRouter()
	r.Use(serve.NewRequestMetrics(d.registry, metricsNamespace).Middleware, serve.Recover(d.log), serve.LimitBody(maxBody))
	if len(d.corsOrigins) > 0 {
		r.Use(cors.Handler(cors.Options{
			AllowedOrigins: d.corsOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodDelete},
			AllowedHeaders: []string{"X-User-ID", "Authorization", "Content-Type"},
			ExposedHeaders: []string{"Retry-After"},
			MaxAge:         corsMaxAge,
		}))
	}
	r.Use(originGuard(d.allowedOrigins))
	r.NotFound(serve.NotFound)
	r.MethodNotAllowed(serve.MethodNotAllowed)
	serve.Health(r, d.ready)
	r.Handle("/metrics", promhttp.HandlerFor(d.registry, promhttp.HandlerOpts{Registry: d.registry}))
	r.Method(http.MethodGet, openapi.Path, openapi.Handler(openapi.Writer()))
	r.Group(func(r chi.Router) {
		if d.writeGuard != nil {
			r.Use(d.writeGuard)
		}
		d.likes.Routes(r)
		d.likes.UserRoutes(r)
	})
	d.likes.ReadRoutes(r)
	d.timelines.Routes(r)
	if d.sessions != nil {
		d.sessions.Routes(r)
	}
	return r
}

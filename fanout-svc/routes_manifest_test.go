package main

import (
	"context"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/testkit/apicheck"
	"github.com/likes/likes/testkit/routes/routestest"
)

// TestManifestsRouteFanoutRoutes walks the node's router, built by newRouter as run builds it
// (its hub, relay and Redis are not needed to list routes): the Ingresses and haproxy's :8090
// must send every public route (the streams, the page, its assets, the client library) to
// fanout-svc, and no Ingress or haproxy frontend may send an internal one (/metrics, the health
// probes, /admin; testkit/routes) to any service. A route added to the router and forgotten in a
// manifest fails here. The OpenAPI document (/openapi.json) is the exception: writer-svc and
// fanout-svc both serve one at that path, and the Ingresses share one host, so they route neither;
// haproxy's :8090 must send it to the node.
func TestManifestsRouteFanoutRoutes(t *testing.T) {
	cfg, err := loadConfig([]string{"fanout-svc"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	streams := stream.New(cfg.Stream, nil, nil, nil, log)
	reg := prometheus.NewRegistry()
	router := newRouter(cfg, log, reg, serve.NewRequestMetrics(reg, "likes_fanout"), streams, &redisGuard{}, func(context.Context) error { return nil })
	m := routestest.Load(t, "..")
	routes, doc := apicheck.SplitDocumentRoute(routestest.Walk(t, router))
	svc := routestest.Service{Name: "fanout-svc", Port: "8090", Routes: routes}
	if err := apicheck.HAProxyRoutesDocument(m.HAProxy, svc, doc); err != nil {
		t.Error(err)
	}
	for _, p := range m.Problems(svc) {
		t.Error(p)
	}
}

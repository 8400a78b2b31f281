package main

import (
	"testing"

	"github.com/likes/likes/testkit/apicheck"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/routes/routestest"
)

// TestManifestsRouteWriterRoutes walks the writer's router as run builds it: the Ingresses and
// haproxy's :8080 must send every public route to writer-svc, and no Ingress or haproxy frontend
// may send an internal one (/metrics, the health probes, /admin; testkit/routes) to any service. A
// route added to the router and forgotten in a manifest fails here. The OpenAPI document
// (/openapi.json) is the exception: writer-svc and fanout-svc both serve one at that path, and
// the Ingresses share one host, so they route neither; haproxy's :8080 must send it to the writer.
func TestManifestsRouteWriterRoutes(t *testing.T) {
	a, _, _ := buildWriter(t, "--redis-url", redistest.Start(t).URL)
	m := routestest.Load(t, "..")
	routes, doc := apicheck.SplitDocumentRoute(routestest.Walk(t, a.handler))
	svc := routestest.Service{Name: "writer-svc", Port: "8080", Routes: routes}
	if err := apicheck.HAProxyRoutesDocument(m.HAProxy, svc, doc); err != nil {
		t.Error(err)
	}
	for _, p := range m.Problems(svc) {
		t.Error(p)
	}
}

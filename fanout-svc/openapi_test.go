package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/pkg/openapi"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/testkit/apicheck"
)

// testRouter is the node's router as run builds it, without the hub, relay and Redis behind the
// streams: enough to list routes and serve the page and the document.
func testRouter(t *testing.T) http.Handler {
	t.Helper()
	cfg, err := loadConfig([]string{"fanout-svc"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	streams := stream.New(cfg.Stream, nil, nil, nil, log)
	reg := prometheus.NewRegistry()
	return newRouter(cfg, log, reg, serve.NewRequestMetrics(reg, "likes_fanout"), streams, &redisGuard{}, func(context.Context) error { return nil })
}

// TestOpenAPIDocumentsTheRouter walks the node's router against its OpenAPI document
// (pkg/openapi/fanout.json): a route added without its document, or an operation documented that
// the router does not serve, fails here.
func TestOpenAPIDocumentsTheRouter(t *testing.T) {
	for _, p := range apicheck.Fanout().Problems(testRouter(t)) {
		t.Error(p)
	}
}

// TestOpenAPIRepliesMatch sends the node's non-stream routes through apicheck: the document, the
// page, an asset, the client library, an unknown asset, a wrong method, the probes and /metrics
// each answer as the document says.
func TestOpenAPIRepliesMatch(t *testing.T) {
	srv := httptest.NewServer(testRouter(t))
	defer srv.Close()
	apicheck.Serve(t, srv.Listener.Addr().String(), apicheck.Fanout())
	c := &http.Client{Transport: apicheck.Wrap(nil)}
	defer c.CloseIdleConnections()
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, openapi.Path, http.StatusOK},
		{http.MethodGet, "/", http.StatusOK},
		{http.MethodHead, "/", http.StatusOK},
		{http.MethodGet, "/assets/style.css", http.StatusOK},
		{http.MethodGet, "/assets/nope.css", http.StatusNotFound},
		{http.MethodGet, "/client/likes.js", http.StatusOK},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodGet, "/healthz", http.StatusOK},
		{http.MethodGet, "/readyz", http.StatusOK},
		{http.MethodGet, "/metrics", http.StatusOK},
		{http.MethodGet, "/sse/bad$id", http.StatusBadRequest},
		{http.MethodGet, "/sse", http.StatusBadRequest},
	} {
		req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s: %d; want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		}
	}
}

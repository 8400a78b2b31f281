package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/testkit/hostiletest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestHostileClients runs the hostile-client suite against a real node on its real port, the
// fast accept loops in front of net/http as in production: after every attack the node answers
// /healthz, its heap is back within bounds, and a viewer connected before the suite gets the
// next update. The request-level attacks run on every route of the node's router (built again by
// newRouter, as in TestManifestsRouteFanoutRoutes, to walk it).
func TestHostileClients(t *testing.T) {
	rs := redistest.Start(t)
	n := startNode(t, rs.URL, map[string]string{"READ_HEADER_TIMEOUT": "1s", "READ_TIMEOUT": "2s"})
	w := n.watch(t, "hostile")
	var count int64
	hostiletest.Run(t, hostiletest.Target{
		Addr:        strings.TrimPrefix(n.base, "http://"),
		HeadTimeout: time.Second,
		ReadTimeout: 2 * time.Second,
		Path:        "/sse/hostile-victim",
		ListPath:    "/sse?posts=",
		IdleConns:   2000,
		Router:      walkableRouter(t),
		Valid:       map[string]string{"/sse": "/sse?posts=1,2", "/client/*": "/client/likes.js"},
		After: func(t *testing.T) {
			count++
			publish(t, rs, "hostile", count)
			poll.Until(t, 5*time.Second, "the viewer connected before the suite to get the update", func() bool {
				c, _, eof := w.state()
				return c == count && !eof
			})
		},
	})
	for _, m := range []string{"likes_fanout_loop_panics_total", "likes_fanout_viewer_panics_total"} {
		if p := n.metric(m); p != 0 {
			t.Errorf("%s: %v panics recovered; want none", m, p)
		}
	}
}

// walkableRouter builds the node's router as run does, without the hub, relay and Redis it
// serves with: enough to list its routes.
func walkableRouter(t *testing.T) http.Handler {
	t.Helper()
	cfg, err := loadConfig([]string{"fanout-svc"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	reg := prometheus.NewRegistry()
	return newRouter(cfg, log, reg, serve.NewRequestMetrics(reg, "likes_fanout"), stream.New(cfg.Stream, nil, nil, nil, log),
		&redisGuard{}, func(context.Context) error { return nil })
}

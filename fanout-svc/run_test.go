package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

func TestRunServesAndStopsOnCancel(t *testing.T) {
	rs := redistest.Start(t)
	runUntilReady(t, map[string]string{"REDIS_URL": rs.URL})
}

// TestRunFindsRedisThroughSentinel: with sentinel addresses the node is ready on the primary
// they name, and REDIS_URL (here naming nothing) is ignored.
func TestRunFindsRedisThroughSentinel(t *testing.T) {
	s := redistest.StartSentinel(t, 1)
	runUntilReady(t, map[string]string{"REDIS_URL": "redis://127.0.0.1:1/0",
		"REDIS_SENTINEL_ADDRS": s.AddrList(), "REDIS_SENTINEL_MASTER": s.Master})
}

// runUntilReady runs fanout-svc with env, waits until /readyz answers 200, cancels and expects
// run to return nil.
func runUntilReady(t *testing.T, env map[string]string) {
	t.Helper()
	addr := freeport.Addr(t)
	env["LISTEN_ADDR"], env["LOG_LEVEL"], env["DRAIN_WINDOW"] = addr, "error", "50ms"
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"fanout-svc"}, func(k string) string { return env[k] }, io.Discard) }()

	poll.Until(t, 10*time.Second, "fanout-svc to become ready", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("run returned %v; want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of cancel")
	}
}

func TestConfigRejectsBadValues(t *testing.T) {
	for _, env := range []map[string]string{
		{"MAX_POSTS_PER_STREAM": "65"},
		{"MAX_CONNS": "0"},
		{"READ_TIMEOUT": "0"},
		{"FLUSH_WINDOW": "-1s"},
		{"WATCHING_INTERVAL": "-1s"},
		{"WATCHING_INTERVAL": "1ms"},
		{"TRUSTED_PROXIES": "10.0.0.300"},
		{"HEARTBEAT_INTERVAL": "soon"},
		{"PAGE_POSTS": "a,b,c", "MAX_POSTS_PER_STREAM": "2"},
		{"REDIS_SENTINEL_MASTER": "likes"},
	} {
		if _, err := loadConfig([]string{"fanout-svc"}, func(k string) string { return env[k] }, io.Discard); err == nil {
			t.Errorf("loadConfig(%v) succeeded; want an error", env)
		}
	}
}

func TestConfigRejectsClusterWithSentinel(t *testing.T) {
	env := map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000", "REDIS_SENTINEL_ADDRS": "s:26379"}
	_, err := loadConfig([]string{"fanout-svc"}, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("got %v; want an error saying cluster and sentinel addresses are both set", err)
	}
}

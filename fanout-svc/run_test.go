package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/likes/likes/pkg/freeport"
	"github.com/likes/likes/pkg/poll"
	"github.com/likes/likes/pkg/redistest"
)

func TestRunServesAndStopsOnCancel(t *testing.T) {
	rs := redistest.Start(t)
	addr := freeport.Addr(t)
	env := map[string]string{"LISTEN_ADDR": addr, "REDIS_URL": rs.URL, "LOG_LEVEL": "error", "DRAIN_WINDOW": "50ms"}
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
		{"FLUSH_WINDOW": "-1s"},
		{"WATCHING_INTERVAL": "-1s"},
		{"WATCHING_INTERVAL": "1ms"},
		{"TRUSTED_PROXIES": "not-an-ip"},
		{"HEARTBEAT_INTERVAL": "soon"},
		{"PAGE_POSTS": "a,b,c", "MAX_POSTS_PER_STREAM": "2"},
	} {
		if _, err := loadConfig([]string{"fanout-svc"}, func(k string) string { return env[k] }, io.Discard); err == nil {
			t.Errorf("loadConfig(%v) succeeded; want an error", env)
		}
	}
}

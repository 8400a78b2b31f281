package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// startRun runs writer-svc's run in a goroutine with env, waits for /healthz and returns the base
// URL and the channel run's result arrives on.
func startRun(t *testing.T, ctx context.Context, env map[string]string) (string, <-chan error) {
	t.Helper()
	addr := freeport.Addr(t)
	env["LISTEN_ADDR"] = addr
	env["LOG_LEVEL"] = "error"
	done := make(chan error, 1)
	go func() { // exits when run returns, after ctx is cancelled or SIGTERM
		done <- run(ctx, []string{"writer-svc"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	}()
	base := "http://" + addr
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	poll.Until(t, 10*time.Second, "/healthz answers", func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v", err)
		default:
		}
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return base, done
}

func waitRun(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v; want nil after a graceful stop", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return within 15s of being stopped")
	}
}

func TestRunServesAndStops(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := startRun(t, ctx, map[string]string{"REDIS_URL": srv.URL, "LIKE_RATE": "5/1s"})
	w := &testWriter{URL: base, Client: &http.Client{Timeout: 5 * time.Second}}
	defer w.Client.CloseIdleConnections()
	// The default identity mode: a session names the user, X-User-ID alone is refused.
	if got := w.like(t, "e2e", "alice"); got.Status != http.StatusUnauthorized {
		t.Errorf("a like naming its user in X-User-ID: %d %s; want 401", got.Status, got.Raw)
	}
	tok, _ := startSession(t, w)
	wantLike(t, w.do(t, http.MethodPost, "/like/e2e", "Authorization: Bearer "+tok), "e2e", 1, true)
	if got := w.do(t, "GET", "/readyz"); got.Status != 200 {
		t.Errorf("/readyz: %d; want 200", got.Status)
	}
	cancel()
	waitRun(t, done)
}

func TestRunStopsOnSIGTERM(t *testing.T) {
	srv := redistest.Start(t)
	_, done := startRun(t, context.Background(), map[string]string{"REDIS_URL": srv.URL})
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitRun(t, done)
}

// TestShutdownFinishesInFlightLike holds a like inside Redis (CLIENT PAUSE), stops the writer,
// and checks that the listener closes at once while the held like still completes with 200
// before run returns.
func TestShutdownFinishesInFlightLike(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := startRun(t, ctx, map[string]string{"REDIS_URL": srv.URL, "REQUEST_TIMEOUT": "5s", "REDIS_TIMEOUT": "5s", "TRUST_USER_HEADER": "true"})
	if _, err := srv.Do("CLIENT", "PAUSE", 5000, "WRITE"); err != nil {
		t.Fatal(err)
	}
	w := &testWriter{URL: base, Client: &http.Client{Timeout: 10 * time.Second}}
	defer w.Client.CloseIdleConnections()
	liked := make(chan *http.Response, 1)
	go func() { // exits when the like is answered or fails
		req, _ := http.NewRequest(http.MethodPost, base+"/like/p", nil)
		req.Header.Set("X-User-ID", "inflight")
		resp, err := w.Client.Do(req)
		if err != nil {
			resp = &http.Response{StatusCode: -1, Status: err.Error(), Body: http.NoBody}
		}
		liked <- resp
	}()
	srv.AwaitHeldScript(t)

	cancel()
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	poll.Until(t, 5*time.Second, "listener closed", func() bool {
		resp, err := probe.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("run returned (%v) while a like was in flight", err)
	default:
	}
	if _, err := srv.Do("CLIENT", "UNPAUSE"); err != nil {
		t.Fatal(err)
	}
	resp := <-liked
	defer resp.Body.Close()
	var body struct {
		Count int64
		Liked bool
	}
	if err := decodeJSON(resp, &body); resp.StatusCode != 200 || err != nil || body.Count != 1 || !body.Liked {
		t.Errorf("in-flight like: %d %s %+v %v; want 200 count 1 liked", resp.StatusCode, resp.Status, body, err)
	}
	waitRun(t, done)
}

func TestRunHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"writer-svc", "--help"}, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("--help: %v; want nil", err)
	}
	for _, want := range []string{"LISTEN_ADDR", "REDIS_URL", "REDIS_CLUSTER_ADDRS", "REDIS_SENTINEL_ADDRS", "REDIS_SENTINEL_MASTER", "REDIS_PREFIX", "LOG_LEVEL",
		"REQUEST_TIMEOUT", "CORS_ORIGINS", "LIKE_RATE", "AUTH_JWT_SECRET", "AUTH_JWKS_URL", "X-User-ID", "gateway",
		"READ_HEADER_TIMEOUT", "READ_TIMEOUT", "WRITE_TIMEOUT", "IDLE_TIMEOUT", "MAX_HEADER_BYTES", "SHUTDOWN_TIMEOUT",
		"BATCH_WINDOW", "BATCH_SIZE", "REDIS_ACK_REPLICAS", "ADMIN_TOKEN", "AUTH_ADMIN_ROLE", "/me/likes", "/likes/{postID}/users"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad like rate", nil, map[string]string{"LIKE_RATE": "lots"}, "like rate"},
		{"short secret", nil, map[string]string{"AUTH_JWT_SECRET": "short"}, "32 bytes"},
		{"zero request timeout", []string{"--request-timeout", "0s"}, nil, "request timeout"},
		{"write timeout below request timeout", []string{"--write-timeout", "1s"}, nil, "write timeout"},
		{"jwks url not http", nil, map[string]string{"AUTH_JWKS_URL": "ftp://idp/keys", "AUTH_JWT_AUDIENCE": "likes"}, "jwks url"},
		{"jwks without an audience", nil, map[string]string{"AUTH_JWKS_URL": "https://idp/keys"}, "AUTH_JWT_AUDIENCE"},
		{"trusted header and site tokens", nil, map[string]string{"TRUST_USER_HEADER": "true", "AUTH_JWT_SECRET": strings.Repeat("s", 32)}, "choose one"},
		{"no identity at all", nil, map[string]string{"SESSIONS": "false"}, "no way to identify"},
		{"malformed env duration", nil, map[string]string{"REQUEST_TIMEOUT": "soon"}, "REQUEST_TIMEOUT"},
		{"unknown flag", []string{"--nope"}, nil, "nope"},
		{"zero batch size", nil, map[string]string{"BATCH_SIZE": "0"}, "batch size"},
		{"batch size beyond the script's", []string{"--batch-size", "1001"}, nil, "batch size"},
		{"negative batch window", []string{"--batch-window", "-1ms"}, nil, "batch window"},
		{"negative ack replicas", nil, map[string]string{"REDIS_ACK_REPLICAS": "-1"}, "ack replicas"},
		{"cluster and sentinel", nil, map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000", "REDIS_SENTINEL_ADDRS": "s:26379"}, "both set"},
		{"sentinel master without sentinels", []string{"--redis-sentinel-master", "likes"}, nil, "REDIS_SENTINEL_ADDRS"},
		{"zero session ttl", []string{"--sessions", "--session-ttl", "0s"}, nil, "session ttl"},
		{"session max age below ttl", []string{"--sessions", "--session-max-age", "30m"}, nil, "max age"},
		{"short session secret", nil, map[string]string{"SESSIONS": "true", "AUTH_SESSION_SECRET": "short"}, "session secret"},
		{"key rotation too short for the token life", []string{"--sessions", "--session-key-rotate", "1m"}, nil, "too short"},
		{"key rotation not whole seconds", []string{"--sessions", "--session-key-rotate", "1500ms"}, nil, "whole seconds"},
		{"bad session rate", nil, map[string]string{"SESSION_RATE": "lots"}, "session rate"},
		{"bad trusted proxy", nil, map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,proxy_local"}, "trusted proxies"},
		{"short admin token", nil, map[string]string{"ADMIN_TOKEN": "short"}, "admin token"},
		{"cluster write timeout too short to erase", nil, map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000", "WRITE_TIMEOUT": "4s"}, "on a Cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"writer-svc"}, tt.args...), func(k string) string { return tt.env[k] }, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error mentioning %q", err, tt.want)
			}
		})
	}
}

package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestViewersPerIPGroupsIPv6By64: MAX_VIEWERS_PER_IP counts an IPv6 client by its /64, as the
// writer's limits do (clientip.Source), since one subscriber usually holds a whole /64: behind
// a trusted proxy, a fourth stream from a fourth address of one /64 is refused with 429, and an
// address of another /64 is served. On the fast path and through the router alike.
func TestViewersPerIPGroupsIPv6By64(t *testing.T) {
	rs := redistest.Start(t)
	addr := strings.TrimPrefix(startNodeEnv(t, map[string]string{
		"REDIS_URL": rs.URL, "MAX_VIEWERS_PER_IP": "3", "TRUSTED_PROXIES": "127.0.0.1",
	}), "http://")
	fast := func(client string) int {
		resp, _, _ := exchange(t, addr, streamRequest("/sse/v6", "X-Forwarded-For: "+client+"\r\n"))
		return resp.StatusCode // the body stays open: the stream holds its place until cleanup
	}
	routed := func(client string) int {
		resp := viaRouter(t, addr, streamRequest("/sse/v6", "X-Forwarded-For: "+client+"\r\n"))
		return resp.StatusCode
	}
	for i, client := range []string{"2001:db8::1", "2001:db8::2", "2001:db8:0:0:ffff::3"} {
		if got := fast(client); got != http.StatusOK {
			t.Fatalf("stream %d of 2001:db8::/64 (%s): %d; want 200", i+1, client, got)
		}
	}
	if got := fast("2001:db8::4"); got != http.StatusTooManyRequests {
		t.Errorf("fourth stream of 2001:db8::/64 on the fast path: %d; want 429", got)
	}
	if got := routed("2001:db8::5"); got != http.StatusTooManyRequests {
		t.Errorf("fourth stream of 2001:db8::/64 through the router: %d; want 429", got)
	}
	if got := fast("2001:db8:0:1::1"); got != http.StatusOK {
		t.Errorf("a stream of another /64 (2001:db8:0:1::/64): %d; want 200", got)
	}
}

// TestViewersPerIPDefault: a node run as built caps one client at 5,000 streams, as the deploy
// files do; 0 turns the cap off.
func TestViewersPerIPDefault(t *testing.T) {
	for _, tt := range []struct {
		give string
		want int
	}{{"", 5000}, {"0", 0}, {"7", 7}} {
		env := map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}
		if tt.give != "" {
			env["MAX_VIEWERS_PER_IP"] = tt.give
		}
		cfg, err := loadConfig([]string{"fanout-svc"}, func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Stream.MaxPerSource != tt.want {
			t.Errorf("MAX_VIEWERS_PER_IP=%q: cap %d; want %d", tt.give, cfg.Stream.MaxPerSource, tt.want)
		}
	}
}

package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestStreamRefusalsAllowOtherOrigins: a full node's 503 and a bad request's 400, whether the fast
// accept path or net/http writes them, carry the served stream's Access-Control-Allow-Origin and
// expose Retry-After, so that a page on another origin reads the status and the hint instead of
// a CORS TypeError.
func TestStreamRefusalsAllowOtherOrigins(t *testing.T) {
	rs := redistest.Start(t)
	base := startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL, "MAX_CONNS": "1"})
	addr := strings.TrimPrefix(base, "http://")
	held, _, _ := exchange(t, addr, streamRequest("/sse/cors1"))
	firstData(t, held)
	if got := held.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Fatalf("served stream: Access-Control-Allow-Origin %q; want *", got)
	}
	origin := "Origin: http://elsewhere.example\r\n"
	fast, _, _ := exchange(t, addr, streamRequest("/sse/cors1", origin))
	routed := viaRouter(t, addr, streamRequest("/sse/cors1", origin))
	bad, _, _ := exchange(t, addr, streamRequest("/sse/bad!id", origin))
	badRouted := viaRouter(t, addr, streamRequest("/sse/bad!id", origin))
	for _, tt := range []struct {
		what string
		resp *http.Response
		want int
	}{
		{"fast path, full node", fast, http.StatusServiceUnavailable},
		{"router, full node", routed, http.StatusServiceUnavailable},
		{"fast path, bad id", bad, http.StatusBadRequest},
		{"router, bad id", badRouted, http.StatusBadRequest},
	} {
		if tt.resp.StatusCode != tt.want {
			t.Errorf("%s: %d; want %d", tt.what, tt.resp.StatusCode, tt.want)
		}
		if got := tt.resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin %q; want * as the served stream has", tt.what, got)
		}
		if got := tt.resp.Header.Get("Access-Control-Expose-Headers"); got != "Retry-After" {
			t.Errorf("%s: Access-Control-Expose-Headers %q; want Retry-After", tt.what, got)
		}
	}
	if fast.Header.Get("Retry-After") == "" || routed.Header.Get("Retry-After") == "" {
		t.Errorf("full node: Retry-After %q (fast), %q (router); want one on both", fast.Header.Get("Retry-After"), routed.Header.Get("Retry-After"))
	}
}

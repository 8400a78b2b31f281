package main

import (
	"net/http"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestTrustedProxyByName: with TRUSTED_PROXIES naming the balancer by host name ("localhost",
// which the system resolver gives as 127.0.0.1), the writer as run builds it counts SESSION_RATE
// under the client that the balancer's X-Forwarded-For names; without it, under the peer. The
// writer's close stops the re-resolution (goleak checks).
func TestTrustedProxyByName(t *testing.T) {
	for _, tt := range []struct {
		trusted     []string
		secondFromB int // status of a session asked from 127.0.0.1 for another client
	}{
		{[]string{"--trusted-proxies", "localhost"}, http.StatusOK},
		{nil, http.StatusTooManyRequests},
	} {
		w := startWriter(t, redistest.Start(t), append([]string{"--sessions", "--session-rate", "1/1m"}, tt.trusted...)...)
		startSession(t, w, "X-Forwarded-For: 203.0.113.1")
		if got := w.do(t, http.MethodPost, "/session", "X-Forwarded-For: 203.0.113.2"); got.Status != tt.secondFromB {
			t.Errorf("%v: a session for another client: %d; want %d", tt.trusted, got.Status, tt.secondFromB)
		}
		if got := w.do(t, http.MethodPost, "/session", "X-Forwarded-For: 203.0.113.1"); got.Status != http.StatusTooManyRequests {
			t.Errorf("%v: a second session for the first client: %d; want 429", tt.trusted, got.Status)
		}
	}
}

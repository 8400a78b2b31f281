package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestTrustedProxyByName: with TRUSTED_PROXIES naming the balancer by host name ("localhost",
// which the system resolver gives as 127.0.0.1), run resolves it, and MAX_VIEWERS_PER_IP counts
// the client that the balancer's X-Forwarded-For names on the fast accept path; without it, the
// header is a client's own claim and the peer is counted. The node's cleanup stops run, and with
// it the re-resolution (goleak checks).
func TestTrustedProxyByName(t *testing.T) {
	rs := redistest.Start(t)
	for _, tt := range []struct {
		trusted     string
		secondFromB int // status of a stream from 127.0.0.1 that says it is for another client
	}{
		{"localhost", http.StatusOK},
		{"", http.StatusTooManyRequests},
	} {
		t.Run("TRUSTED_PROXIES="+tt.trusted, func(t *testing.T) {
			addr := strings.TrimPrefix(startNodeEnv(t, map[string]string{
				"REDIS_URL": rs.URL, "MAX_VIEWERS_PER_IP": "1", "TRUSTED_PROXIES": tt.trusted,
			}), "http://")
			open := func(client string) int {
				resp, _, _ := exchange(t, addr, streamRequest("/sse/tp", "X-Forwarded-For: "+client+"\r\n"))
				resp.Body.Close()
				return resp.StatusCode
			}
			if got := open("203.0.113.1"); got != http.StatusOK {
				t.Fatalf("first stream: %d; want 200", got)
			}
			if got := open("203.0.113.2"); got != tt.secondFromB {
				t.Errorf("a stream for another client: %d; want %d", got, tt.secondFromB)
			}
			if got := open("203.0.113.1"); got != http.StatusTooManyRequests {
				t.Errorf("a second stream for the first client: %d; want 429", got)
			}
		})
	}
}

package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/hostiletest"
)

// TestHostileClients runs the hostile-client suite against a writer on its real port, with the
// server's own timeouts and limits: after every attack the writer answers /healthz, its heap is
// back within bounds, and a new user's like is still acknowledged and counted.
func TestHostileClients(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--read-header-timeout", "1s", "--read-timeout", "2s")
	likes := 0
	hostiletest.Run(t, hostiletest.Target{
		Addr:        strings.TrimPrefix(w.URL, "http://"),
		HeadTimeout: time.Second,
		ReadTimeout: 2 * time.Second,
		Path:        "/count/hostile",
		ListPath:    "/counts?posts=",
		PostPath:    "/like/hostile-victim",
		IdleConns:   2000,
		After: func(t *testing.T) {
			likes++
			if r := w.like(t, "hostile", "u"+itoa(likes)); r.Status != http.StatusOK {
				t.Fatalf("like after the attack: %d %s", r.Status, r.Raw)
			}
			if n := w.count(t, "hostile"); n != int64(likes) {
				t.Fatalf("count %d after %d acknowledged likes", n, likes)
			}
		},
	})
}

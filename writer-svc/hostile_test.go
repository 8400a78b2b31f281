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
// back within bounds, and a new user's like is still acknowledged and counted. The request-level
// attacks run on every route of the writer's router (built again, as run builds it, to walk it),
// as a user the writer trusts, and an attack of hostile requests must store nothing.
func TestHostileClients(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--read-header-timeout", "1s", "--read-timeout", "2s")
	router, _, _ := buildWriter(t, "--redis-url", w.Redis.URL, trustHeader)
	likes := 0
	hostiletest.Run(t, hostiletest.Target{
		Addr:        strings.TrimPrefix(w.URL, "http://"),
		HeadTimeout: time.Second,
		ReadTimeout: 2 * time.Second,
		Path:        "/count/hostile",
		ListPath:    "/counts?posts=",
		PostPath:    "/like/hostile-victim",
		IdleConns:   2000,
		Router:      router.handler,
		Valid:       map[string]string{"/counts": "/counts?posts=1,2", "/likes": "/likes?posts=1,2", "/react/{postID}/{kind}": "/react/1/heart"},
		Headers:     []string{"X-User-ID: hostile-attacker"},
		Stored:      func(t *testing.T) int64 { return w.lastingKeys(t) },
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

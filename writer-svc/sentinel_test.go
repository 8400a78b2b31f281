package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestWriterFindsPrimaryThroughSentinel: a writer configured with sentinel addresses (and a
// REDIS_URL that names nothing, which they override) stores likes on the primary, and after a
// kill -9 of the primary stores them on the promoted replica, which has the likes from before.
func TestWriterFindsPrimaryThroughSentinel(t *testing.T) {
	s := redistest.StartSentinel(t, 1)
	w := serveWriter(t, trustHeader, "--redis-url", "redis://127.0.0.1:1/0",
		"--redis-sentinel-addrs", s.AddrList(), "--redis-sentinel-master", s.Master)
	w.Redis = s.Primary()
	w.RDB = w.Redis.Client(t)
	if r := w.like(t, "p1", "alice"); r.Status != http.StatusOK {
		t.Fatalf("like: %d %s; want 200", r.Status, r.Raw)
	}
	if got := w.count(t, "p1"); got != 1 {
		t.Fatalf("count on the primary %d; want 1", got)
	}
	if _, err := w.Redis.Do("WAIT", 1, 5000); err != nil {
		t.Fatal(err)
	}

	old := s.KillPrimary()
	poll.Until(t, 10*time.Second, "a like acknowledged after the kill", func() bool {
		return w.like(t, "p1", "bob").Status == http.StatusOK
	})
	w.Redis = s.WaitPromoted(old) // the Sentinel the writer asked may be ahead of the others
	w.RDB = w.Redis.Client(t)
	if got := w.count(t, "p1"); got != 2 {
		t.Errorf("count on the new primary %d; want 2", got)
	}
}

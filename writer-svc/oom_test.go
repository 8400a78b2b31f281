package main

import (
	"net/http"
	"testing"

	"github.com/likes/likes/testkit/clienttest"
)

// TestLikeRefusedForMemoryIs503: a data node at its maxmemory (noeviction, as every deployment
// runs them) refuses the like script; the like is answered 503 with Retry-After and nothing is
// stored, and likes are acknowledged again once there is room.
func TestLikeRefusedForMemoryIs503(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	wantLike(t, w.like(t, "mem", "u1"), "mem", 1, true)
	if _, err := w.Redis.Do("CONFIG", "SET", "maxmemory", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Redis.Do("CONFIG", "SET", "maxmemory-policy", "noeviction"); err != nil {
		t.Fatal(err)
	}
	used, errUsed := clienttest.ScrapeMetric(w.URL, "likes_writer_redis_used_memory_bytes")
	limit, errMax := clienttest.ScrapeMetric(w.URL, "likes_writer_redis_maxmemory_bytes")
	if errUsed != nil || errMax != nil || limit != 1 || used <= limit {
		t.Errorf("exported used %v (%v) of maxmemory %v (%v); want Redis's own figures (1 byte of maxmemory, more used)", used, errUsed, limit, errMax)
	}
	keys := w.dataKeys(t)
	got := w.like(t, "mem", "u2")
	if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" {
		t.Errorf("a like Redis refused for memory: %d %q %s; want 503 with Retry-After", got.Status, got.Header.Get("Retry-After"), got.Raw)
	}
	if n := w.dataKeys(t); n != keys || w.count(t, "mem") != 1 {
		t.Errorf("the refused like changed something: %d keys (was %d), count %d", n, keys, w.count(t, "mem"))
	}
	if _, err := w.Redis.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	wantLike(t, w.like(t, "mem", "u2"), "mem", 2, true)
}

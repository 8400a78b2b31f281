package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestWritesRefusedWhileClockUncertain: with the offset of Redis' clock more uncertain than
// CLOCK_UNCERTAINTY_MAX (1ns: no loopback round trip is that short), every request that runs the
// like script gets 503 with Retry-After and the writer's JSON error, and changes nothing; reads
// are served, and the metrics show the offset and its uncertainty.
func TestWritesRefusedWhileClockUncertain(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--clock-uncertainty-max", "1ns")
	for _, req := range [][2]string{
		{http.MethodPost, "/like/p"}, {http.MethodDelete, "/like/p"}, {http.MethodPost, "/react/p/heart"},
		{http.MethodDelete, "/me/likes"},
	} {
		got := w.do(t, req[0], req[1], "X-User-ID: u")
		if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" ||
			!strings.Contains(got.Raw, "too uncertain") {
			t.Errorf("%s %s with the clock too uncertain: %d Retry-After %q %s; want 503 naming the clock, with Retry-After",
				req[0], req[1], got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
	}
	if n := w.dataKeys(t); n != 0 {
		t.Errorf("%d keys written by refused writes; want none", n)
	}
	if got := w.do(t, http.MethodGet, "/count/p"); got.Status != http.StatusOK {
		t.Errorf("GET /count/p: %d %s; want 200, reads need no clock", got.Status, got.Raw)
	}
	m := w.do(t, http.MethodGet, "/metrics").Raw
	for _, name := range []string{"likes_writer_redis_clock_offset_seconds ", "likes_writer_redis_clock_uncertainty_seconds ",
		"likes_writer_redis_clock_age_seconds "} {
		if !strings.Contains(m, "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestWritesServedWithClockMeasured: with the default bound a local Redis' offset is trusted at
// once (newApp measures before serving), so the first like is stored.
func TestWritesServedWithClockMeasured(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	wantLike(t, w.like(t, "p", "u"), "p", 1, true)
}

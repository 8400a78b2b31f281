package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestUserDataAndRefreshLimits: who-liked reads, a user's likes, their erasure and session
// refreshes each spend a per-address budget (USER_DATA_ADDR_RATE, SESSION_REFRESH_RATE) shared by
// all replicas; past it, 429 with Retry-After and nothing done.
func TestUserDataAndRefreshLimits(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--sessions", "--user-data-addr-rate", "3/1h burst 3", "--session-refresh-rate", "1/1h burst 1")
	wantLike(t, w.like(t, "d1", "alice"), "d1", 1, true)
	for i, path := range []string{"/likes/d1/users", "/me/likes"} {
		if got := w.do(t, http.MethodGet, path, "X-User-ID: alice"); got.Status != http.StatusOK {
			t.Fatalf("read %d within the budget: %d %s", i, got.Status, got.Raw)
		}
	}
	if got := w.do(t, http.MethodDelete, "/me/likes", "X-User-ID: bob"); got.Status != http.StatusOK {
		t.Fatalf("an erasure within the budget: %d %s", got.Status, got.Raw)
	}
	for _, req := range [][2]string{{http.MethodGet, "/likes/d1/users"}, {http.MethodGet, "/me/likes"}, {http.MethodDelete, "/me/likes"}} {
		got := w.do(t, req[0], req[1], "X-User-ID: alice")
		if got.Status != http.StatusTooManyRequests || got.Header.Get("Retry-After") == "" || !strings.Contains(got.Raw, "from this address") {
			t.Errorf("%s %s past the budget: %d %q %s; want 429 with Retry-After", req[0], req[1], got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
	}
	if n := w.count(t, "d1"); n != 1 {
		t.Errorf("count %d after a refused erasure; want alice's like kept", n)
	}

	tok, _ := startSession(t, w)
	if got := w.do(t, http.MethodPost, "/session/refresh", "Authorization: Bearer "+tok); got.Status != http.StatusOK {
		t.Fatalf("first refresh: %d %s", got.Status, got.Raw)
	}
	got := w.do(t, http.MethodPost, "/session/refresh", "Authorization: Bearer "+tok)
	if got.Status != http.StatusTooManyRequests || got.Header.Get("Retry-After") == "" || !strings.Contains(got.Raw, "session refreshes") {
		t.Errorf("second refresh past the budget: %d %q %s; want 429 naming refreshes", got.Status, got.Header.Get("Retry-After"), got.Raw)
	}
}

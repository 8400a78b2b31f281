package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestNewPostFloodStopsGrowingRedis: one user liking or reacting to post 1, 2, 3... brings at
// most NEW_POST_RATE's burst of posts into existence; past it each gets 429 with Retry-After and
// Redis stops growing. Posts that exist pass free, for that user and for others.
func TestNewPostFloodStopsGrowingRedis(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--new-post-rate", "5/1h burst 5")
	var atLimit int64
	for i := range 20 {
		post := "flood" + strconv.Itoa(i)
		var got reply
		if i%2 == 0 {
			got = w.like(t, post, "flooder")
		} else {
			got = w.do(t, http.MethodPost, "/react/"+post+"/clap", "X-User-ID: flooder")
		}
		switch {
		case i < 5 && got.Status != http.StatusOK:
			t.Fatalf("new post %d within the burst: %d %s", i, got.Status, got.Raw)
		case i >= 5 && (got.Status != http.StatusTooManyRequests || got.Header.Get("Retry-After") == "" || !strings.Contains(got.Raw, "new posts")):
			t.Fatalf("new post %d past the burst: %d %q %s; want 429 naming new posts, with Retry-After", i, got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
		if i == 5 {
			atLimit = w.dataKeys(t)
		}
	}
	if n := w.dataKeys(t); n > atLimit {
		t.Errorf("Redis grew from %d to %d keys past the limit", atLimit, n)
	}
	// Posts that exist cost nothing: the flooder's likes of them, and another user's.
	wantLike(t, w.like(t, "flood1", "flooder"), "flood1", 1, true) // reacted to, not liked, before
	wantLike(t, w.like(t, "flood0", "other"), "flood0", 2, true)
}

// TestNewPostAddrLimit: NEW_POST_ADDR_RATE holds all the users behind one address to one budget
// of new posts, telling the address by X-Forwarded-For from a trusted proxy only.
func TestNewPostAddrLimit(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--new-post-addr-rate", "3/1h burst 3", "--trusted-proxies", "127.0.0.1/32")
	from := func(user, post, addr string) reply {
		return w.do(t, http.MethodPost, "/like/"+post, "X-User-ID: "+user, "X-Forwarded-For: "+addr)
	}
	for i := range 3 {
		wantLike(t, from("fresh"+strconv.Itoa(i), "addr"+strconv.Itoa(i), "203.0.113.9"), "addr"+strconv.Itoa(i), 1, true)
	}
	if got := from("fresh3", "addr3", "203.0.113.9"); got.Status != http.StatusTooManyRequests || !strings.Contains(got.Raw, "from this address") {
		t.Errorf("a fourth new post from the address: %d %s; want 429 naming the address", got.Status, got.Raw)
	}
	wantLike(t, from("fresh4", "addr4", "203.0.113.10"), "addr4", 1, true) // another address
}

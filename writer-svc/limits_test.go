package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestLimitsRideInTheLikeCall: on one Redis a like's per-address and per-user limits cost no
// call of their own: every script Redis runs for a flood from one address is a like batch, which
// spends the address's tokens in order, so exactly the burst is stored and the rest gets 429 with
// Retry-After, changing nothing. Once a batch found the bucket empty, the writer refuses the
// address itself: more likes from it cost Redis no call at all. The user's own limit rides the
// same way.
func TestLimitsRideInTheLikeCall(t *testing.T) {
	const burst, flood, addr = 5, 40, "203.0.113.9"
	w := startWriter(t, nil, trustHeader, "--like-addr-rate", strconv.Itoa(burst)+"/1m burst "+strconv.Itoa(burst),
		"--like-rate", "1/1m burst 1", "--trusted-proxies", "127.0.0.1/32")
	w.like(t, "warm", "warm-up") // the post exists: new-post limits ask no more
	mon := startMonitor(t, w.Redis)

	var wg sync.WaitGroup
	replies := make([]reply, flood)
	for i := range flood {
		wg.Go(func() {
			replies[i] = w.do(t, http.MethodPost, "/like/warm", "X-User-ID: fresh-"+strconv.Itoa(i), "X-Forwarded-For: "+addr)
		})
	}
	wg.Wait()
	liked, refused, likedBy := 0, 0, ""
	for i, got := range replies {
		switch retry, _ := strconv.Atoi(got.Header.Get("Retry-After")); {
		case got.Status == http.StatusOK && got.Body["liked"] == true:
			liked++
			likedBy = "fresh-" + strconv.Itoa(i)
		case got.Status == http.StatusTooManyRequests && retry >= 1 && retry <= 12 && strings.Contains(got.Raw, "from this address"):
			refused++
		default:
			t.Errorf("a like of the flood: %d Retry-After %q %s; want 200 liked or 429 naming the address", got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
	}
	if liked != burst || refused != flood-burst {
		t.Errorf("%d liked and %d refused; want the burst, %d, and %d", liked, refused, burst, flood-burst)
	}
	if n := w.count(t, "warm"); n != burst+1 || w.dedupKeys(t, "warm") != burst+1 {
		t.Errorf("count %d; want %d (the warm-up and the burst): refused likes changed nothing", n, burst+1)
	}
	log := mon.scripts(t)
	withBucket := 0
	for _, call := range log.calls {
		if len(call) < 4 || call[3] != keys.Count("warm") {
			t.Fatalf("a script call that is not a like batch: %.200q", call)
		}
		if strings.Contains(strings.Join(call, " "), keys.LikeAddrRate(addr)) {
			withBucket++
		}
	}
	if withBucket == 0 || len(log.evals) != 0 {
		t.Errorf("%d of %d like batches carried the address's bucket, %d EVALs; want some, and none", withBucket, len(log.calls), len(log.evals))
	}

	// The bucket is empty: the writer answers the address itself, without Redis.
	calls := w.Redis.ScriptCalls(t)
	for i := range 20 {
		got := w.do(t, http.MethodPost, "/like/warm", "X-User-ID: late-"+strconv.Itoa(i), "X-Forwarded-For: "+addr)
		if got.Status != http.StatusTooManyRequests {
			t.Fatalf("a like from the emptied address: %d %s; want 429", got.Status, got.Raw)
		}
	}
	if n := w.Redis.ScriptCalls(t) - calls; n != 0 {
		t.Errorf("20 likes from an address refused lately cost %d script calls; want 0", n)
	}

	// The user's own limit (1 a minute) rode in the same calls (no other script ran): the batch
	// that stored a user's like found its bucket empty, so the user's second like, from an
	// address with room, is refused by the writer itself and changes nothing.
	if likedBy == "" {
		t.Fatal("no like of the flood was stored")
	}
	calls = w.Redis.ScriptCalls(t)
	got := w.do(t, http.MethodPost, "/like/warm", "X-User-ID: "+likedBy, "X-Forwarded-For: 198.51.100.4")
	if got.Status != http.StatusTooManyRequests || strings.Contains(got.Raw, "address") || got.Header.Get("Retry-After") == "" {
		t.Errorf("a user's second like in a minute: %d %s, Retry-After %q; want 429 for the user's limit, with Retry-After",
			got.Status, got.Raw, got.Header.Get("Retry-After"))
	}
	if n := w.Redis.ScriptCalls(t) - calls; n != 0 {
		t.Errorf("the refused like cost %d script calls; want 0", n)
	}
	if n := w.count(t, "warm"); n != burst+1 {
		t.Errorf("count %d after the refused like; want %d", n, burst+1)
	}
	if ttl := w.RDB.PTTL(context.Background(), keys.RateLimit(likedBy)).Val(); ttl <= 0 {
		t.Errorf("the user's bucket has PTTL %v; want it set by the batch", ttl)
	}
}

package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// TestAckReplicasWaitsForAReplica runs a writer with REDIS_ACK_REPLICAS=1 on a primary with one
// replica. A like is answered 200 only once the replica has it: it reads back there at once. With
// the replica stopped, a like is answered 503 with Retry-After within the request timeout and
// stays on the primary; once the replica is back, the retried like is answered 200 and counts
// once.
func TestAckReplicasWaitsForAReplica(t *testing.T) {
	const timeout = 500 * time.Millisecond
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	w := startWriter(t, primary, trustHeader, "--redis-ack-replicas", "1", "--request-timeout", timeout.String())
	ctx := context.Background()

	wantLike(t, w.like(t, "p", "alice"), "p", 1, true)
	if n := replica.Client(t).Exists(ctx, keys.User("p", "alice")).Val(); n != 1 {
		t.Error("like answered 200 before the replica had it")
	}

	replica.Kill()
	start := time.Now()
	got := w.like(t, "p", "bob")
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("like with the replica down took %s; want within the %s request timeout", took, timeout)
	}
	if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" || got.Body["error"] == nil {
		t.Errorf("like with the replica down: %d %v %s; want 503 JSON with Retry-After", got.Status, got.Header, got.Raw)
	}
	if n := w.RDB.Exists(ctx, keys.User("p", "bob")).Val(); n != 1 {
		t.Error("the unconfirmed like is not on the primary")
	}
	if m := w.do(t, "GET", "/metrics"); !strings.Contains(m.Raw, "likes_writer_unreplicated_batches_total 1") {
		t.Error("unreplicated batch not counted")
	}

	replica.Restart()
	replica.WaitReplicating(t)
	wantLike(t, w.like(t, "p", "bob"), "p", 2, false) // the retry: stored already, counted once
	if n := w.count(t, "p"); n != 2 {
		t.Errorf("count %d after the retry; want 2", n)
	}
}

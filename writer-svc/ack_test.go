package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestAckReplicasWaitsForAReplica runs a writer with REDIS_ACK_REPLICAS=1 on a primary with one
// replica. A like is answered 200 only once the replica has it: it reads back there at once. With
// the replica stopped, a like is answered 503 with Retry-After within the request timeout, marked
// "unconfirmed" (applied on the primary, which no other 503 is), and stays on the primary; once the replica is back, the retried like is answered 200 and counts
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
	if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" || got.Body["error"] == nil || got.Body["unconfirmed"] != true {
		t.Errorf("like with the replica down: %d %v %s; want 503 JSON with Retry-After, marked unconfirmed", got.Status, got.Header, got.Raw)
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

// TestAckAllWaitsForEveryReplicaTheSentinelsDoNotCallDown runs a writer with
// REDIS_ACK_REPLICAS=all on a primary with two replicas and three Sentinels. A like is answered
// 200 only once both replicas have it. With a replica frozen (SIGSTOP: it holds its connections
// but confirms nothing, as a replica across a partition), likes get 503 "unconfirmed" until a
// majority of the Sentinels call it down, and 200 after, confirmed by the other replica.
func TestAckAllWaitsForEveryReplicaTheSentinelsDoNotCallDown(t *testing.T) {
	s := redistest.StartSentinel(t, 2)
	w := serveWriter(t, trustHeader, "--redis-url", "redis://127.0.0.1:1/0", "--request-timeout", "2s",
		"--redis-sentinel-addrs", s.AddrList(), "--redis-sentinel-master", s.Master, "--redis-ack-replicas", "all")
	w.Redis = s.Primary()
	w.RDB = w.Redis.Client(t)
	ctx := context.Background()
	wantLike(t, w.like(t, "p", "alice"), "p", 1, true)
	for _, r := range s.Nodes[1:] {
		if n := r.Client(t).Exists(ctx, keys.User("p", "alice")).Val(); n != 1 {
			t.Errorf("like answered 200 before replica %s had it", r.Addr)
		}
	}
	frozen := s.Nodes[2]
	frozen.Signal(syscall.SIGSTOP)
	defer frozen.Signal(syscall.SIGCONT)
	got := w.like(t, "p", "bob")
	if got.Status != http.StatusServiceUnavailable || got.Body["unconfirmed"] != true {
		t.Errorf("like with a replica frozen, before the Sentinels call it down: %d %s; want 503 unconfirmed", got.Status, got.Raw)
	}
	poll.Until(t, 15*time.Second, "a like acknowledged once the Sentinels call the frozen replica down", func() bool {
		return w.like(t, "p", "carol").Status == http.StatusOK
	})
	if n := s.Nodes[1].Client(t).Exists(ctx, keys.User("p", "carol")).Val(); n != 1 {
		t.Error("like answered 200 before the replica that is up had it")
	}
}

// TestAckAllNeedsSentinel: "all" asks the Sentinels, so it is refused without them; a number or
// "all" is all REDIS_ACK_REPLICAS takes.
func TestAckAllNeedsSentinel(t *testing.T) {
	env := func(string) string { return "" }
	if _, err := loadConfig([]string{"writer-svc", "--redis-ack-replicas", "all"}, env, io.Discard); err == nil {
		t.Error(`"all" without Sentinel: no error`)
	}
	if _, err := loadConfig([]string{"writer-svc", "--redis-ack-replicas", "most"}, env, io.Discard); err == nil {
		t.Error(`"most": no error`)
	}
	cfg, err := loadConfig([]string{"writer-svc", "--redis-ack-replicas", "all", "--redis-sentinel-addrs", "127.0.0.1:26379"}, env, io.Discard)
	if err != nil || !cfg.AckAll {
		t.Errorf(`"all" with Sentinel: AckAll %v, %v; want true`, cfg.AckAll, err)
	}
}

// TestStalledCallAnswersUnconfirmed stalls the primary (DEBUG SLEEP) while a like's call waits
// in its input, with the only replica frozen: the primary wakes before the like's deadline and
// runs the script, and WAIT then blocks past the deadline, so the writer hears nothing in time.
// The like is applied on the primary, so its 503 must be marked unconfirmed: a plain 503 promises
// "not applied" (the partition suite found such 503s read back on a paused or cut-off primary).
func TestStalledCallAnswersUnconfirmed(t *testing.T) {
	// The primary wakes well before the deadline, and late enough that WAIT, whose timeout the
	// writer set from the deadline when it sent the call, runs past it.
	const timeout, stall = 2 * time.Second, 1.0 // stall in seconds
	primary := redistest.Start(t, "--enable-debug-command", "yes")
	replica := redistest.StartReplica(t, primary)
	w := startWriter(t, primary, trustHeader, "--redis-ack-replicas", "1", "--request-timeout", timeout.String())
	wantLike(t, w.like(t, "p", "alice"), "p", 1, true)

	replica.Signal(syscall.SIGSTOP)
	defer replica.Signal(syscall.SIGCONT)
	slept := make(chan error, 1)
	go func() { // exits when DEBUG SLEEP returns
		_, err := primary.Do("DEBUG", "SLEEP", stall)
		slept <- err
	}()
	probe := redis.NewClient(&redis.Options{Addr: primary.Addr, ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer probe.Close()
	poll.Until(t, 5*time.Second, "redis asleep", func() bool {
		return probe.Ping(context.Background()).Err() != nil
	})
	got := w.like(t, "p", "bob")
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" || got.Body["unconfirmed"] != true {
		t.Errorf("like whose call Redis ran but did not answer in time: %d %s; want 503 marked unconfirmed", got.Status, got.Raw)
	}
	if n := w.RDB.Exists(context.Background(), keys.User("p", "bob")).Val(); n != 1 {
		t.Error("the like is not on the primary: the stall did not let the script run before the deadline")
	}
	if m := w.do(t, "GET", "/metrics"); !strings.Contains(m.Raw, "likes_writer_unanswered_batches_total 1") {
		t.Error("unanswered batch not counted")
	}
}

// TestReadsWaitForTheReplicas: with REDIS_ACK_REPLICAS=1 a read is served only once a replica
// has everything it shows. With the replica frozen, a like applied on the primary but
// unconfirmed (503 unconfirmed) must not be read back: the reads answer 503 and change nothing,
// since a failover to that replica would take the like back. Once the replica is back, the reads
// show it.
func TestReadsWaitForTheReplicas(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	w := startWriter(t, primary, trustHeader, "--redis-ack-replicas", "1", "--request-timeout", "500ms")
	wantLike(t, w.like(t, "p", "alice"), "p", 1, true)
	reads := []string{"/count/p", "/counts?posts=p", "/likes/p/users"}
	for _, path := range reads {
		if got := w.do(t, "GET", path); got.Status != http.StatusOK {
			t.Errorf("GET %s with the replica up: %d %s; want 200", path, got.Status, got.Raw)
		}
	}

	replica.Signal(syscall.SIGSTOP)
	if got := w.like(t, "p", "bob"); got.Status != http.StatusServiceUnavailable || got.Body["unconfirmed"] != true {
		t.Fatalf("like with the replica frozen: %d %s; want 503 unconfirmed", got.Status, got.Raw)
	}
	for _, path := range reads {
		if got := w.do(t, "GET", path); got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s with the replica frozen: %d %s; want 503 with Retry-After, not the unconfirmed like", path, got.Status, got.Raw)
		}
	}
	replica.Signal(syscall.SIGCONT)
	poll.Until(t, 10*time.Second, "the count read once the replica is back", func() bool {
		return w.do(t, "GET", "/count/p").Status == http.StatusOK
	})
	if got := w.do(t, "GET", "/count/p"); got.Body["count"] != float64(2) {
		t.Errorf("count once the replica is back: %s; want 2 (the unconfirmed like, now on the replica)", got.Raw)
	}
}

// TestAckedStatesArePublishedOnceConfirmed runs a writer with REDIS_ACK_REPLICAS=1 on a primary
// with one replica, and listens on the post's channel as a fanout node does. A confirmed like's
// state is published. With the replica down, a like is answered 503 "unconfirmed" and its state
// is not published: a viewer must not be shown a like a failover may take back. Once the replica
// is back and has it, the writer's late publisher publishes it, with no retry needed. Before, the
// script published the state before WAIT, the moment the primary had it.
func TestAckedStatesArePublishedOnceConfirmed(t *testing.T) {
	const timeout = 500 * time.Millisecond
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	w := startWriter(t, primary, trustHeader, "--redis-ack-replicas", "1", "--request-timeout", timeout.String())
	sub := w.RDB.Subscribe(context.Background(), keys.Channel("pc"))
	defer sub.Close()
	if _, err := sub.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	type message struct {
		at      time.Time
		payload string
	}
	got := make(chan message, 16)
	go func() { // ends when sub closes its channel
		for m := range sub.Channel() {
			got <- message{time.Now(), m.Payload}
		}
	}()
	next := func(what string) message {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("no state published within 10 s: %s", what)
			return message{}
		}
	}

	wantLike(t, w.like(t, "pc", "alice"), "pc", 1, true)
	if m := next("alice's confirmed like"); !strings.Contains(m.payload, `"count":1,`) {
		t.Errorf("published %s; want count 1", m.payload)
	}

	replica.Kill()
	if got := w.like(t, "pc", "bob"); got.Status != http.StatusServiceUnavailable || got.Body["unconfirmed"] != true {
		t.Fatalf("like with the replica down: %d %s; want 503 unconfirmed", got.Status, got.Raw)
	}
	back := time.Now()
	replica.Restart()
	replica.WaitReplicating(t)
	m := next("bob's like, once the replica has it")
	if m.at.Before(back) {
		t.Errorf("bob's unconfirmed like was published %s before the replica came back: %s", back.Sub(m.at), m.payload)
	}
	if !strings.Contains(m.payload, `"count":2,`) {
		t.Errorf("published %s once confirmed; want count 2", m.payload)
	}
}

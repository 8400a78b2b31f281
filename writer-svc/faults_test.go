package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestRedisDownAnswers503 kills Redis: writes and reads answer 503 JSON with Retry-After within
// the request timeout, never 200; readiness fails, liveness holds; after a restart (which also
// empties the script cache) likes work again.
func TestRedisDownAnswers503(t *testing.T) {
	const timeout = 500 * time.Millisecond
	w := startWriter(t, nil, trustHeader, "--request-timeout", timeout.String(), "--redis-timeout", timeout.String())
	wantLike(t, w.like(t, "p", "before"), "p", 1, true)
	w.Redis.Kill()

	for _, req := range []struct{ method, path string }{{"POST", "/like/p"}, {"DELETE", "/like/p"}, {"GET", "/count/p"}} {
		start := time.Now()
		got := w.do(t, req.method, req.path, "X-User-ID: during")
		took := time.Since(start)
		if got.Status != 503 || got.Header.Get("Retry-After") == "" || got.Body["error"] == nil {
			t.Errorf("%s %s with Redis down: %d %v %s; want 503 JSON with Retry-After", req.method, req.path, got.Status, got.Header, got.Raw)
		}
		if took > timeout+time.Second {
			t.Errorf("%s %s took %s; want within the %s request timeout", req.method, req.path, took, timeout)
		}
	}
	if got := w.do(t, "GET", "/readyz"); got.Status != 503 {
		t.Errorf("/readyz with Redis down: %d; want 503", got.Status)
	}
	if got := w.do(t, "GET", "/healthz"); got.Status != 200 {
		t.Errorf("/healthz with Redis down: %d; want 200", got.Status)
	}
	if got := w.do(t, "GET", "/metrics"); !strings.Contains(got.Raw, "likes_writer_redis_errors_total 3") {
		t.Errorf("redis errors not counted")
	}

	w.Redis.Restart() // no persistence: the restarted Redis is empty
	poll.Until(t, 10*time.Second, "like accepted after restart", func() bool {
		return w.like(t, "p", "after").Status == 200
	})
	if n := w.count(t, "p"); n != 1 {
		t.Errorf("count after restart %d; want 1 (the like while down must not have landed)", n)
	}
}

// TestRetryAfterTimeoutNeverDoubleCounts stalls Redis (DEBUG SLEEP) while a client likes: the
// writer answers 503 within its timeout and the client keeps retrying. The script calls of the
// requests that timed out wait in Redis' input and run once it wakes up, past their deadlines:
// the script refuses them (DEADLINE), so a like answered 503 does not land later. The like
// counts exactly once.
func TestRetryAfterTimeoutNeverDoubleCounts(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	w := startWriter(t, srv, trustHeader, "--request-timeout", timeout.String(), "--redis-timeout", timeout.String())

	slept := make(chan error, 1)
	go func() { // exits when DEBUG SLEEP returns
		_, err := srv.Do("DEBUG", "SLEEP", "1.5")
		slept <- err
	}()
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer probe.Close()
	poll.Until(t, 5*time.Second, "redis asleep", func() bool {
		return probe.Ping(context.Background()).Err() != nil
	})

	attempts := 0
	for {
		start := time.Now()
		got := w.like(t, "p", "alice")
		attempts++
		if got.Status == 200 {
			if got.Body["count"] != float64(1) {
				t.Errorf("reply after retries: %s; want count 1", got.Raw)
			}
			break
		}
		if got.Status != 503 || got.Header.Get("Retry-After") == "" {
			t.Fatalf("attempt %d: %d %s; want 503 with Retry-After", attempts, got.Status, got.Raw)
		}
		if took := time.Since(start); took > timeout+time.Second {
			t.Errorf("attempt %d took %s; want about the %s timeout", attempts, took, timeout)
		}
		if attempts > 50 {
			t.Fatal("no success after 50 attempts")
		}
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	if attempts < 2 {
		t.Fatalf("the first attempt succeeded; the test did not stall Redis")
	}
	// Give every timed-out request time to run in Redis, then check nothing counted twice.
	if err := w.RDB.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	wantLike(t, w.like(t, "p", "alice"), "p", 1, false)
	if n, keys := w.count(t, "p"), w.dedupKeys(t, "p"); n != 1 || keys != 1 {
		t.Errorf("after %d attempts: count %d, dedup keys %d; want 1 and 1", attempts, n, keys)
	}
	if stats, _ := srv.Do("INFO", "errorstats"); !strings.Contains(fmt.Sprint(stats), "errorstat_DEADLINE:") {
		t.Errorf("no script call refused for its deadline: the timed-out attempts never reached Redis late")
	}
	t.Logf("%d attempts, 503s then a 200", attempts)
}

// TestNoAcknowledgedLikeLostOnCrash runs Redis with appendfsync always, kills it with SIGKILL
// while many users like, restarts it from its append-only file and checks that every like
// answered 200 "liked":true survived, none counted twice, and each count equals its dedup keys.
func TestNoAcknowledgedLikeLostOnCrash(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	w := startWriter(t, srv, trustHeader, "--request-timeout", "1s", "--redis-timeout", "1s")
	posts := []string{"d0", "d1", "d2", "d3"}
	const workers, killAfter = 32, 400

	var mu sync.Mutex
	acked := make(map[[2]string]bool) // (post, user) answered 200 liked:true
	var ok200, failures atomic.Int32
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			sawFailure := false
			for i := 0; i < 200 && !sawFailure; i++ {
				post, user := posts[i%len(posts)], "w"+itoa(g)+"-"+itoa(i)
				req, _ := http.NewRequest(http.MethodPost, w.URL+"/like/"+post, nil)
				req.Header.Set("X-User-ID", user)
				resp, err := w.Client.Do(req)
				if err != nil {
					t.Errorf("request: %v", err)
					return
				}
				var body struct{ Liked bool }
				decodeErr := decodeJSON(resp, &body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 200 && decodeErr == nil && body.Liked:
					mu.Lock()
					acked[[2]string{post, user}] = true
					mu.Unlock()
					if ok200.Add(1) == killAfter {
						once.Do(func() { srv.Kill(); close(killed) })
					}
				case resp.StatusCode == 503:
					failures.Add(1)
					sawFailure = true
				default:
					t.Errorf("like %s/%s: %d liked=%v; want 200 liked or 503", post, user, resp.StatusCode, body.Liked)
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("only %d likes acknowledged; the kill never happened", ok200.Load())
	}
	srv.Restart()
	poll.Until(t, 10*time.Second, "writer ready after the restart", func() bool {
		return w.do(t, "GET", "/readyz").Status == 200
	})

	var stored int64
	for _, post := range posts {
		n, keys := w.count(t, post), w.dedupKeys(t, post)
		if n != int64(keys) {
			t.Errorf("post %s: count %d but %d dedup keys", post, n, keys)
		}
		stored += n
	}
	lost := 0
	for k := range acked {
		if w.RDB.Exists(context.Background(), keys.User(k[0], k[1])).Val() != 1 {
			lost++
		}
	}
	if lost > 0 || stored < int64(len(acked)) {
		t.Errorf("%d acknowledged likes lost; %d stored, %d acknowledged", lost, stored, len(acked))
	}
	// Retrying every acknowledged like after the crash changes nothing.
	for k := range acked {
		got := w.like(t, k[0], k[1])
		if got.Status != 200 || got.Body["liked"] != false {
			t.Fatalf("retry of acknowledged %v: %d %s; want 200 liked:false", k, got.Status, got.Raw)
		}
	}
	t.Logf("acknowledged %d, stored %d (the rest were in flight at the kill), 503s %d", len(acked), stored, failures.Load())
}

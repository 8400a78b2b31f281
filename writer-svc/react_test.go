package main

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/update"
)

// TestReactionAPI: reactions count per kind, at most one per user and post per interval (then 429
// with Retry-After and the wait in milliseconds), leave likes alone, show in GET /counts and
// /likes, and travel with the like count in one published state; an unknown kind is a 400 that
// changes nothing.
func TestReactionAPI(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--reaction-kinds", "clap,heart", "--reaction-interval", "2s")
	msgs := w.RDB.Subscribe(context.Background(), keys.Channel("42"))
	t.Cleanup(func() { _ = msgs.Close() })
	if _, err := msgs.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	react := func(user, kind string) reply {
		return w.do(t, http.MethodPost, "/react/42/"+kind, "X-User-ID: "+user)
	}
	got := react("alice", "clap")
	if got.Status != 200 || got.Body["post_id"] != "42" || got.Body["kind"] != "clap" || got.Body["count"] != float64(1) {
		t.Fatalf("first reaction: %d %s; want 200 count 1", got.Status, got.Raw)
	}
	ts, _ := got.Body["ts"].(float64)
	m, err := msgs.ReceiveMessage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u, err := update.Parse([]byte(m.Payload))
	if err != nil || u.Count != 0 || u.Reactions != `{"clap":1}` || float64(u.TS) != ts {
		t.Errorf("published %s, %v; want count 0, reactions {\"clap\":1} at the reply's ts %.0f", m.Payload, err, ts)
	}

	got = react("alice", "heart")
	wait, _ := got.Body["retry_after_ms"].(float64)
	if got.Status != 429 || got.Header.Get("Retry-After") != "2" || wait <= 0 || wait > 2000 {
		t.Errorf("second reaction within the interval: %d Retry-After %q %s; want 429, 2 and 0 < retry_after_ms <= 2000",
			got.Status, got.Header.Get("Retry-After"), got.Raw)
	}
	if got := react("bob", "clap"); got.Status != 200 || got.Body["count"] != float64(2) {
		t.Errorf("another user's reaction: %d %s; want 200 count 2", got.Status, got.Raw)
	}
	for _, kind := range []string{"wow", "Clap", "x%20y"} {
		if got := react("carol", kind); got.Status != 400 || got.Body["error"] == nil {
			t.Errorf("kind %q: %d %s; want a 400 JSON error", kind, got.Status, got.Raw)
		}
	}
	if got := react("carol", "heart"); got.Status != 200 || got.Body["count"] != float64(1) {
		t.Errorf("carol after her refused kinds: %d %s; want 200 (a 400 changes nothing)", got.Status, got.Raw)
	}
	if n := w.count(t, "42"); n != 0 {
		t.Errorf("like count %d after reactions; want 0", n)
	}
	wantLike(t, w.like(t, "42", "alice"), "42", 1, true)

	for _, path := range []string{"/counts?posts=42,7", "/likes?posts=42,7"} {
		got := w.do(t, http.MethodGet, path, "X-User-ID: alice")
		posts, _ := got.Body["posts"].([]any)
		if got.Status != 200 || len(posts) != 2 {
			t.Fatalf("GET %s: %d %s", path, got.Status, got.Raw)
		}
		p0, _ := posts[0].(map[string]any)
		p1, _ := posts[1].(map[string]any)
		rx0, _ := p0["reactions"].(map[string]any)
		rx1, ok := p1["reactions"].(map[string]any)
		if p0["count"] != float64(1) || rx0["clap"] != float64(2) || rx0["heart"] != float64(1) || len(rx0) != 2 || !ok || len(rx1) != 0 {
			t.Errorf("GET %s: %s; want post 42 with count 1, clap 2, heart 1 and post 7 with reactions {}", path, got.Raw)
		}
	}
}

// TestReactionsOfAStormShareBatches: 300 users react to one post at once: each counts once, the
// kinds' counts add up, and fewer updates are published than reactions (they shared calls), with
// the last one carrying the final counts.
func TestReactionsOfAStormShareBatches(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--reaction-kinds", "a,b,c")
	ps := w.RDB.Subscribe(context.Background(), keys.Channel("s"))
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	const users = 300
	kinds := []string{"a", "b", "c"}
	client := loadClient(t, 100)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	for i := range users {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			req, _ := http.NewRequest(http.MethodPost, w.URL+"/react/s/"+kinds[i%3], nil)
			req.Header.Set("X-User-ID", "u"+strconv.Itoa(i))
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("reaction %d: %d; want 200", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	want := `{"a":100,"b":100,"c":100}`
	published := 0
	for {
		m, err := ps.ReceiveTimeout(context.Background(), 5*time.Second)
		if err != nil {
			t.Fatalf("after %d updates: %v; want one with %s", published, err, want)
		}
		msg, ok := m.(*redis.Message)
		if !ok {
			continue
		}
		published++
		u, err := update.Parse([]byte(msg.Payload))
		if err == nil && u.Reactions == want {
			break
		}
	}
	if published >= users {
		t.Errorf("%d updates for %d reactions; want fewer (reactions of a busy post share a call)", published, users)
	}
	t.Logf("%d reactions in %d updates", users, published)
}

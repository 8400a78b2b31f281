package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestLikesReachViewersOnTwoNodes is the founding promise: 200 distinct users like one post at
// once, 50 of them twice; every viewer on both fanout nodes ends at exactly 200 and never sees
// the count go backwards.
func TestLikesReachViewersOnTwoNodes(t *testing.T) {
	rs := redistest.Start(t)
	writer := StartWriter(t, rs.URL)
	nodes := []*Proc{StartFanout(t, rs.URL), StartFanout(t, rs.URL)}
	var viewers []*Viewer
	for _, n := range nodes {
		for i := 0; i < 5; i++ {
			viewers = append(viewers, Watch(t, n.URL+"/sse/42"))
		}
	}
	WaitCount(t, 10*time.Second, "42", 0, viewers...)

	var wg sync.WaitGroup
	var mu sync.Mutex
	liked := 0
	for u := 0; u < 250; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("user-%d", u%200) // users 0-49 like twice
			code, body := doRequest(t, http.MethodPost, writer.URL+"/like/42", user)
			if code != http.StatusOK {
				t.Errorf("like by %s: %d %s", user, code, body)
				return
			}
			var r struct{ Liked bool }
			_ = json.Unmarshal([]byte(body), &r)
			if r.Liked {
				mu.Lock()
				liked++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if liked != 200 {
		t.Fatalf("%d likes were accepted as new; want 200 (50 were repeats)", liked)
	}
	WaitCount(t, 10*time.Second, "42", 200, viewers...)
	for i, v := range viewers {
		if _, backwards, _ := v.Stats(); backwards != 0 {
			t.Errorf("viewer %d saw %d updates go backwards", i, backwards)
		}
	}
	code, body := doRequest(t, http.MethodGet, writer.URL+"/count/42", "")
	if code != 200 || !strings.Contains(body, `"count":200`) {
		t.Errorf("GET /count/42 = %d %s; want count 200", code, body)
	}
	// Each node measured the way from Redis to its viewers: at least one write pass, and every
	// pass within the 5 s the histogram's buckets reach on this loopback stack.
	for _, n := range nodes {
		count, within := n.Metric(t, "likes_fanout_delivery_seconds_count"), n.Metric(t, `likes_fanout_delivery_seconds_bucket{le="5"}`)
		if count < 1 || within != count {
			t.Errorf("%s: %v delivery samples, %v of them within 5 s; want at least one, all within", n.Name, count, within)
		}
	}
}

// TestMultiPostStreamAndUnlike follows three posts on one connection: each post's updates
// arrive, and an unlike brings a count back down.
func TestMultiPostStreamAndUnlike(t *testing.T) {
	rs := redistest.Start(t)
	writer := StartWriter(t, rs.URL)
	node := StartFanout(t, rs.URL)
	v := Watch(t, node.URL+"/sse?posts=a,b,c")
	for _, p := range []string{"a", "b", "c"} {
		WaitCount(t, 10*time.Second, p, 0, v)
	}
	like := func(method, post, user string) {
		if code, body := doRequest(t, method, writer.URL+"/like/"+post, user); code != 200 {
			t.Fatalf("%s %s: %d %s", method, post, code, body)
		}
	}
	like(http.MethodPost, "a", "u1")
	like(http.MethodPost, "b", "u1")
	like(http.MethodPost, "b", "u2")
	like(http.MethodPost, "c", "u3")
	WaitCount(t, 5*time.Second, "a", 1, v)
	WaitCount(t, 5*time.Second, "b", 2, v)
	WaitCount(t, 5*time.Second, "c", 1, v)
	like(http.MethodDelete, "b", "u1")
	like(http.MethodDelete, "b", "u1") // idempotent
	WaitCount(t, 5*time.Second, "b", 1, v)
	if _, backwards, _ := v.Stats(); backwards != 0 {
		t.Errorf("%d updates went backwards", backwards)
	}
}

// TestLastEventIDResumes reconnects with the id of the last event, the post's version: nothing
// is resent when the post did not change, and its whole state (the count, and the reactions once
// it has any) when it did. An id of the old form, the count, gets the whole state too.
func TestLastEventIDResumes(t *testing.T) {
	rs := redistest.Start(t)
	writer := StartWriter(t, rs.URL)
	node := StartFanout(t, rs.URL)
	for _, u := range []string{"a", "b", "c"} {
		doRequest(t, http.MethodPost, writer.URL+"/like/7", u)
	}
	version := func() int64 {
		v, err := rs.Client(t).Get(context.Background(), rediskeys.New("").Version("7")).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	liked := version()
	if code, body := doRequest(t, http.MethodPost, writer.URL+"/react/7/clap", "a"); code != http.StatusOK {
		t.Fatalf("reaction: %d %s", code, body)
	}
	reacted := version()
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	state := []string{`"count":3`, `"counts":{"clap":1}`}
	tests := []struct {
		name   string
		lastID string
		want   []string // data lines expected before the first heartbeat
	}{
		{"fresh", "", state},
		{"up to date", id(reacted), nil},
		{"behind by a reaction", id(liked), state},
		{"an old-form id, the count", "3", state},
		{"garbled id", "x-y", state},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstEvents(t, node.URL+"/sse/7", tt.lastID, 300*time.Millisecond)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q; want %d events matching %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("event %d = %q; want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// firstEvents opens a stream, reads for d, and returns the data lines it got.
func firstEvents(t *testing.T, url, lastID string, d time.Duration) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var lines []string
	done := make(chan struct{})
	go func() { // exits when the body is closed below
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				lines = append(lines, sc.Text())
			}
		}
	}()
	time.Sleep(d) // the assertion is about what did NOT arrive within d
	resp.Body.Close()
	<-done
	return lines
}

// TestStalledViewerDoesNotDelayOthers opens a viewer that never reads, with a tiny receive
// buffer, then likes a post 300 times: 500 normal viewers each receive every one of the 300
// updates, in order, and the node keeps serving. The node shows every update (DISPLAY_BUDGET=0):
// under the default budget 500 viewers see a post at most 48 times a second, newest value wins,
// which is not what this test is about.
func TestStalledViewerDoesNotDelayOthers(t *testing.T) {
	rs := redistest.Start(t)
	writer := StartWriter(t, rs.URL)
	node := StartFanout(t, rs.URL, "DISPLAY_BUDGET=0")
	stalled := openStalled(t, node.Addr, "/sse/9")
	defer stalled.Close()
	normal := make([]*Viewer, 500)
	for i := range normal {
		normal[i] = Watch(t, node.URL+"/sse/9")
	}
	WaitCount(t, 20*time.Second, "9", 0, normal...)
	// The likes go in rounds of 16, each awaited at every normal viewer: a node that falls more
	// than its batch cap (32 frames) behind a post conflates by design, which a busy test
	// machine could cause on its own; within a round nothing may be lost, whatever the load.
	const likes, round = 300, 16
	for i := 0; i < likes; i++ {
		doRequest(t, http.MethodPost, writer.URL+"/like/9", fmt.Sprintf("s%d", i))
		if n := i + 1; n%round == 0 || n == likes {
			WaitCount(t, 10*time.Second, "9", int64(n), normal...)
		}
	}
	for i, v := range normal {
		if events, backwards, connects := v.Stats(); events != 301 || backwards != 0 || connects != 1 {
			t.Fatalf("viewer %d: %d events (want 301: the snapshot and every like), %d backwards, %d connects", i, events, backwards, connects)
		}
	}
	code, _ := doRequest(t, http.MethodGet, node.URL+"/healthz", "")
	if code != 200 {
		t.Errorf("healthz = %d with a stalled viewer", code)
	}
}

// openStalled sends a stream request on a raw connection with a small receive buffer and never
// reads the response.
func openStalled(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetReadBuffer(2048)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	return c
}

// TestBadStreamRequests get 4xx JSON and the node stays healthy.
func TestBadStreamRequests(t *testing.T) {
	rs := redistest.Start(t)
	node := StartFanout(t, rs.URL, "MAX_POSTS_PER_STREAM=3", "PAGE_POSTS=1,2")
	tests := []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/sse/bad%20id", 400},
		{http.MethodGet, "/sse/" + strings.Repeat("x", 65), 400},
		{http.MethodGet, "/sse", 400},
		{http.MethodGet, "/sse?posts=a,b,c,d", 400},
		{http.MethodGet, "/sse?posts=a,,b", 400},
		{http.MethodGet, "/sse?posts=" + strings.Repeat("a,", 5000), 400},
		{http.MethodPost, "/sse/1", 405},
		{http.MethodGet, "/nope", 404},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, node.URL+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || err != nil || body.Error == "" {
			t.Errorf("%s %s = %d (%v, %q); want %d with a JSON error", tt.method, tt.path[:min(len(tt.path), 40)], resp.StatusCode, err, body.Error, tt.want)
		}
	}
}

// TestNodeRefusesBeyondMaxConns answers 503 with Retry-After once the node is full.
func TestNodeRefusesBeyondMaxConns(t *testing.T) {
	rs := redistest.Start(t)
	node := StartFanout(t, rs.URL, "MAX_CONNS=2")
	a, b := Watch(t, node.URL+"/sse/1"), Watch(t, node.URL+"/sse/1")
	poll.Until(t, 5*time.Second, "two viewers", func() bool { return a.Connected() && b.Connected() })
	resp, err := http.Get(node.URL + "/sse/1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third viewer got %d (Retry-After %q); want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestRedisDownRefusesNewViewers: without Redis a node cannot subscribe, so it answers 503
// rather than a stream that would never update.
func TestRedisDownRefusesNewViewers(t *testing.T) {
	rs := redistest.Start(t)
	node := StartFanout(t, rs.URL)
	rs.Kill()
	resp, err := http.Get(node.URL + "/sse/1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("got %d; want 503 while Redis is down", resp.StatusCode)
	}
	if code, _ := doRequest(t, http.MethodGet, node.URL+"/readyz", ""); code != 503 {
		t.Errorf("readyz = %d; want 503 while Redis is down", code)
	}
}

// TestGracefulShutdownClosesViewers: SIGTERM drains viewers and the process exits on its own.
func TestGracefulShutdownClosesViewers(t *testing.T) {
	rs := redistest.Start(t)
	node := StartFanout(t, rs.URL, "DRAIN_WINDOW=300ms")
	v := Watch(t, node.URL+"/sse/1")
	poll.Until(t, 5*time.Second, "viewer connected", v.Connected)
	if !node.Stop(5 * time.Second) {
		t.Fatal("fanout-svc did not exit within 5s of SIGTERM")
	}
	poll.Until(t, 5*time.Second, "viewer disconnected by the drain", func() bool { return !v.Connected() })
}

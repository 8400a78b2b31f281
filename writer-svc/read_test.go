package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/testkit/redistest"
)

// readEntry is one post of a GET /likes or /counts reply as a test sees it.
type readEntry struct {
	post  string
	count float64
	liked any // true, false, or nil when the field must be absent
}

// wantRead checks a 200 read reply against want, entry by entry, and that every ts is a number.
func wantRead(t *testing.T, got reply, want []readEntry) {
	t.Helper()
	posts, _ := got.Body["posts"].([]any)
	if got.Status != http.StatusOK || len(posts) != len(want) {
		t.Fatalf("got %d %s; want 200 with %d posts", got.Status, got.Raw, len(want))
	}
	for i, w := range want {
		p, _ := posts[i].(map[string]any)
		liked, hasLiked := p["liked"]
		_, tsIsNumber := p["ts"].(float64)
		if p["post_id"] != w.post || p["count"] != w.count || (w.liked == nil) == hasLiked || (hasLiked && liked != w.liked) || !tsIsNumber {
			t.Errorf("post %d: %v; want post %s count %v liked %v and a numeric ts", i, p, w.post, w.count, w.liked)
		}
	}
}

func TestReadLikesAndCounts(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	wantLike(t, w.like(t, "42", "alice"), "42", 1, true)
	wantLike(t, w.like(t, "42", "bob"), "42", 2, true)
	wantLike(t, w.like(t, "43", "bob"), "43", 1, true)
	keysBefore := w.dataKeys(t)

	wantRead(t, w.do(t, http.MethodGet, "/likes?posts=42,43,never", "X-User-ID: alice"), []readEntry{
		{"42", 2, true}, {"43", 1, false}, {"never", 0, false},
	})
	wantRead(t, w.do(t, http.MethodGet, "/likes?posts=43,42,43", "X-User-ID: bob"), []readEntry{
		{"43", 1, true}, {"42", 2, true},
	})
	wantRead(t, w.do(t, http.MethodGet, "/likes?posts=42&posts=43", "X-User-ID: alice"), []readEntry{
		{"42", 2, true}, {"43", 1, false},
	})
	wantRead(t, w.do(t, http.MethodGet, "/counts?posts=42,43,never"), []readEntry{
		{"42", 2, nil}, {"43", 1, nil}, {"never", 0, nil},
	})
	// A user header on /counts changes nothing: it is a server-side renderer's call.
	wantRead(t, w.do(t, http.MethodGet, "/counts?posts=42", "X-User-ID: alice"), []readEntry{{"42", 2, nil}})

	got := w.do(t, http.MethodGet, "/likes?posts=42", "X-User-ID: alice")
	if cc := got.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("GET /likes Cache-Control = %q; want no-store (the reply is one user's)", cc)
	}
	if n := w.dataKeys(t); n != keysBefore {
		t.Errorf("reads changed Redis: %d keys; want %d", n, keysBefore)
	}
}

// TestReadVersionMatchesStream: the ts of a read is the post's version, the ts its stream events
// carry, so a client can tell which of the two is newer.
func TestReadVersionMatchesStream(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	w.like(t, "v", "alice")
	ver, err := w.RDB.Get(t.Context(), keys.Version("v")).Int64()
	if err != nil {
		t.Fatal(err)
	}
	got := w.do(t, http.MethodGet, "/counts?posts=v")
	posts, _ := got.Body["posts"].([]any)
	if len(posts) != 1 || posts[0].(map[string]any)["ts"] != float64(ver) {
		t.Errorf("GET /counts?posts=v = %s; want ts %d", got.Raw, ver)
	}
}

func TestReadBadInput(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--max-read-posts", "5")
	five := "a,b,c,d,e"
	tests := []struct {
		name    string
		path    string
		headers []string
		want    int
		wantErr string
	}{
		{"no posts", "/likes", []string{"X-User-ID: u"}, 400, "no posts"},
		{"empty posts", "/counts?posts=", nil, 400, "no posts"},
		{"empty entry", "/likes?posts=a,,b", []string{"X-User-ID: u"}, 400, "post id"},
		{"bad id", "/counts?posts=a,b%20c", nil, 400, "post id"},
		{"hash tag", "/counts?posts=%7Bx%7D", nil, 400, "post id"},
		{"too long id", "/counts?posts=" + strings.Repeat("x", 65), nil, 400, "post id"},
		{"over the cap", "/likes?posts=" + five + ",f", []string{"X-User-ID: u"}, 400, "at most 5"},
		{"over the cap in two params", "/counts?posts=" + five + "&posts=f", nil, 400, "at most 5"},
		{"no user", "/likes?posts=a", nil, 400, "X-User-ID"},
		{"bad user", "/likes?posts=a", []string{"X-User-ID: a:b"}, 400, "user id"},
		{"two users", "/likes?posts=a", []string{"X-User-ID: a", "X-User-ID: b"}, 400, "more than one"},
		{"post method", "/likes?posts=a", []string{"X-User-ID: u"}, 405, "method not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := http.MethodGet
			if tt.want == 405 {
				method = http.MethodPost
			}
			got := w.do(t, method, tt.path, tt.headers...)
			msg, _ := got.Body["error"].(string)
			if got.Status != tt.want || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("%s %s: %d %s; want %d with an error mentioning %q", method, tt.path, got.Status, got.Raw, tt.want, tt.wantErr)
			}
		})
	}
	wantRead(t, w.do(t, http.MethodGet, "/likes?posts="+five, "X-User-ID: u"), []readEntry{
		{"a", 0, false}, {"b", 0, false}, {"c", 0, false}, {"d", 0, false}, {"e", 0, false},
	})
	if n := w.dataKeys(t); n != 0 {
		t.Errorf("bad reads left %d keys in Redis; want 0", n)
	}
}

func TestReadMaxPostsConfig(t *testing.T) {
	for _, give := range []string{"0", "-1", "1001"} {
		_, err := loadConfig([]string{"writer-svc", "--max-read-posts", give}, func(string) string { return "" }, &strings.Builder{})
		if err == nil {
			t.Errorf("--max-read-posts %s accepted; want an error", give)
		}
	}
	cfg, err := loadConfig([]string{"writer-svc"}, func(k string) string {
		if k == "MAX_POSTS_PER_READ" {
			return "250"
		}
		return ""
	}, &strings.Builder{})
	if err != nil || cfg.MaxReadPosts != 250 {
		t.Errorf("MAX_POSTS_PER_READ=250: %d, %v; want 250", cfg.MaxReadPosts, err)
	}
	if cfg, _ := loadConfig([]string{"writer-svc"}, func(string) string { return "" }, &strings.Builder{}); cfg.MaxReadPosts != 100 {
		t.Errorf("default max read posts %d; want 100", cfg.MaxReadPosts)
	}
}

// TestReadWithTokenAuth: with auth on, GET /likes knows the user only from the token, exactly as
// a like does; /counts needs no token.
func TestReadWithTokenAuth(t *testing.T) {
	w := startWriter(t, nil, "--auth-jwt-secret", testSecret)
	alice := token(t, jwt.SigningMethodHS256, []byte(testSecret), "alice", time.Hour, "")
	wantLike(t, w.do(t, http.MethodPost, "/like/42", "Authorization: Bearer "+alice), "42", 1, true)

	wantRead(t, w.do(t, http.MethodGet, "/likes?posts=42,43", "Authorization: Bearer "+alice, "X-User-ID: mallory"), []readEntry{
		{"42", 1, true}, {"43", 0, false},
	})
	expired := token(t, jwt.SigningMethodHS256, []byte(testSecret), "alice", -time.Minute, "")
	for _, headers := range [][]string{{"X-User-ID: alice"}, {"Authorization: Bearer " + expired}, nil} {
		got := w.do(t, http.MethodGet, "/likes?posts=42", headers...)
		if got.Status != http.StatusUnauthorized || got.Body["error"] == nil {
			t.Errorf("GET /likes with %v: %d %s; want 401 JSON", headers, got.Status, got.Raw)
		}
	}
	wantRead(t, w.do(t, http.MethodGet, "/counts?posts=42"), []readEntry{{"42", 1, nil}})
}

// TestReadRedisDown: with Redis gone both reads answer 503 with Retry-After within the request
// timeout, never a 200 that would show zero likes.
func TestReadRedisDown(t *testing.T) {
	const timeout = 500 * time.Millisecond
	w := startWriter(t, nil, trustHeader, "--request-timeout", timeout.String(), "--redis-timeout", timeout.String())
	w.Redis.Kill()
	for _, path := range []string{"/likes?posts=1,2", "/counts?posts=1,2"} {
		start := time.Now()
		got := w.do(t, http.MethodGet, path, "X-User-ID: u")
		if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" || got.Body["error"] == nil {
			t.Errorf("GET %s with Redis down: %d %v %s; want 503 JSON with Retry-After", path, got.Status, got.Header, got.Raw)
		}
		if took := time.Since(start); took > timeout+time.Second {
			t.Errorf("GET %s took %s; want within the %s request timeout", path, took, timeout)
		}
	}
}

// TestReadFromBrowserOrigin: a page on an allowed origin may send GET /likes with its identity
// headers (a preflighted request) and GET /counts, and reads the reply.
func TestReadFromBrowserOrigin(t *testing.T) {
	const origin = "http://page.example:8090"
	w := startWriter(t, nil, trustHeader, "--cors-origins", origin)
	got := w.do(t, http.MethodOptions, "/likes?posts=1", "Origin: "+origin,
		"Access-Control-Request-Method: GET", "Access-Control-Request-Headers: x-user-id, authorization")
	h := strings.ToLower(got.Header.Get("Access-Control-Allow-Headers"))
	if got.Status != 200 || got.Header.Get("Access-Control-Allow-Origin") != origin || got.Header.Get("Access-Control-Allow-Methods") != "GET" ||
		!strings.Contains(h, "x-user-id") || !strings.Contains(h, "authorization") {
		t.Errorf("preflight of GET /likes: %d %v; want 200 allowing %s, GET, x-user-id and authorization", got.Status, got.Header, origin)
	}
	for _, path := range []string{"/likes?posts=1", "/counts?posts=1"} {
		got := w.do(t, http.MethodGet, path, "Origin: "+origin, "X-User-ID: u")
		if got.Status != 200 || got.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("GET %s from %s: %d %v; want 200 with Access-Control-Allow-Origin", path, origin, got.Status, got.Header)
		}
	}
}

// TestReadOnCluster runs both reads through a writer in cluster mode on three masters, with
// posts on every node.
func TestReadOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	w := startWriter(t, c.Nodes[0], trustHeader, "--redis-cluster-addrs", c.AddrList())
	owners := map[string]bool{}
	var posts []string
	var want []readEntry
	for i := 0; len(owners) < 3 || len(posts) < 12; i++ {
		post := fmt.Sprintf("c%d", i)
		owners[c.NodeFor(keys.Count(post)).Addr] = true
		posts = append(posts, post)
		liked := i%2 == 0
		if liked {
			wantLike(t, w.like(t, post, "alice"), post, 1, true)
		}
		want = append(want, readEntry{post, map[bool]float64{true: 1, false: 0}[liked], liked})
	}
	wantRead(t, w.do(t, http.MethodGet, "/likes?posts="+strings.Join(posts, ","), "X-User-ID: alice"), want)
	for i := range want {
		want[i].liked = nil
	}
	wantRead(t, w.do(t, http.MethodGet, "/counts?posts="+strings.Join(posts, ",")), want)
}

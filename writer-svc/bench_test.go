package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/pkg/sessiontoken"
)

// benchKey writes a benchmark key file and returns its path and key.
func benchKey(t *testing.T) (string, *sessiontoken.Key) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bench-session.key")
	if err := os.WriteFile(path, []byte("0123456789abcdef0123456789abcdef-bench\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := sessiontoken.ReadBenchKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, key
}

// benchToken signs a token for user with key, as loadgen's --identity bench does.
func benchToken(t *testing.T, key *sessiontoken.Key, user string) string {
	t.Helper()
	now := time.Now().Unix()
	tok, err := sessiontoken.Sign(sessiontoken.NewClaims(user, now, now, now+3600), key.ID, key.Secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestBenchmarkSessions: with BENCH_SESSION_KEY_FILE a writer takes load-test tokens signed with
// that key for benchmark users (bench-...), and only for them: the key cannot act as a real
// visitor, and its tokens are not refreshed into real ones. Without the setting the same token is
// a 401, and nothing is counted.
func TestBenchmarkSessions(t *testing.T) {
	path, key := benchKey(t)
	w := startWriter(t, nil, "--bench-session-key-file", path)
	wantLike(t, w.do(t, http.MethodPost, "/like/b1", "Authorization: Bearer "+benchToken(t, key, "bench-lg-1")), "b1", 1, true)

	_, visitor := startSession(t, w)
	for name, user := range map[string]string{"a real session's user": visitor, "a site user": "alice"} {
		wantUnauthorized(t, "a benchmark token for "+name, w.do(t, http.MethodPost, "/like/b1", "Authorization: Bearer "+benchToken(t, key, user)))
	}
	refresh := w.do(t, http.MethodPost, "/session/refresh", "Authorization: Bearer "+benchToken(t, key, "bench-lg-1"))
	if refresh.Status != http.StatusUnauthorized {
		t.Errorf("refreshing a benchmark token: %d %s; want 401", refresh.Status, refresh.Raw)
	}

	off := startWriter(t, w.Redis)
	wantUnauthorized(t, "a benchmark token with benchmark mode off", off.do(t, http.MethodPost, "/like/b1", "Authorization: Bearer "+benchToken(t, key, "bench-lg-2")))
	if n := w.count(t, "b1"); n != 1 {
		t.Errorf("post b1 counts %d; want 1 (the benchmark user's like only)", n)
	}
	if n := w.RDB.Exists(t.Context(), keys.SessionKey(sessiontoken.BenchKeyID)).Val(); n != 0 {
		t.Error("a key named after the benchmark kid was looked up or made in Redis")
	}
}

// wantUnauthorized fails the test unless got is the 401 of a refused identity: a JSON error and a
// WWW-Authenticate challenge.
func wantUnauthorized(t *testing.T, what string, got reply) {
	t.Helper()
	if got.Status != http.StatusUnauthorized || got.Body["error"] == nil || !strings.HasPrefix(got.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("%s: %d %v %s; want 401 JSON with WWW-Authenticate", what, got.Status, got.Header, got.Raw)
	}
}

// TestBenchmarkUsersAreReserved: the benchmark namespace belongs to load tests whether benchmark
// mode is on or off: a site JWT or a gateway's X-User-ID naming a user in it is refused (401), so
// a benchmark key can never act for a real user, while ids that merely look alike pass.
func TestBenchmarkUsersAreReserved(t *testing.T) {
	path, _ := benchKey(t)
	site := startWriter(t, nil, "--auth-jwt-secret", testSecret, "--bench-session-key-file", path)
	siteToken := func(user string) string {
		return "Authorization: Bearer " + token(t, jwt.SigningMethodHS256, []byte(testSecret), user, time.Hour, "")
	}
	wantUnauthorized(t, "a site JWT for bench-alice", site.do(t, http.MethodPost, "/like/r1", siteToken("bench-alice")))
	wantLike(t, site.do(t, http.MethodPost, "/like/r1", siteToken("benchmark-alice")), "r1", 1, true)

	gateway := startWriter(t, site.Redis, trustHeader) // benchmark mode off
	wantUnauthorized(t, "X-User-ID bench-alice", gateway.like(t, "r1", "bench-alice"))
	wantLike(t, gateway.like(t, "r1", "alice"), "r1", 2, true)
	if n := site.count(t, "r1"); n != 2 {
		t.Errorf("post r1 counts %d; want 2 (the refused users' likes not among them)", n)
	}
}

func TestBenchmarkKeyFileIsChecked(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--bench-session-key-file", short}, "at least 32"},
		{[]string{"--bench-session-key-file", short + ".missing"}, "benchmark session key"},
	} {
		_, err := loadConfig(append([]string{"writer-svc"}, tt.flags...), func(string) string { return "" }, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v; want an error saying %q", tt.flags, err, tt.want)
		}
	}
	path, _ := benchKey(t)
	_, err := loadConfig([]string{"writer-svc", "--bench-session-key-file", path, "--sessions=false", "--trust-user-header"},
		func(string) string { return "" }, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "SESSIONS=false") {
		t.Errorf("a benchmark key with sessions off: %v; want refused", err)
	}
}

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		if got := w.do(t, http.MethodPost, "/like/b1", "Authorization: Bearer "+benchToken(t, key, user)); got.Status != http.StatusUnauthorized {
			t.Errorf("a benchmark token for %s: %d %s; want 401", name, got.Status, got.Raw)
		}
	}
	refresh := w.do(t, http.MethodPost, "/session/refresh", "Authorization: Bearer "+benchToken(t, key, "bench-lg-1"))
	if refresh.Status != http.StatusUnauthorized {
		t.Errorf("refreshing a benchmark token: %d %s; want 401", refresh.Status, refresh.Raw)
	}

	off := startWriter(t, w.Redis)
	got := off.do(t, http.MethodPost, "/like/b1", "Authorization: Bearer "+benchToken(t, key, "bench-lg-2"))
	if got.Status != http.StatusUnauthorized {
		t.Errorf("a benchmark token with benchmark mode off: %d %s; want 401", got.Status, got.Raw)
	}
	if n := w.count(t, "b1"); n != 1 {
		t.Errorf("post b1 counts %d; want 1 (the benchmark user's like only)", n)
	}
	if n := w.RDB.Exists(t.Context(), keys.SessionKey(sessiontoken.BenchKeyID)).Val(); n != 0 {
		t.Error("a key named after the benchmark kid was looked up or made in Redis")
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

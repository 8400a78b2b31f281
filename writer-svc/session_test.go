package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/testkit/redistest"
)

// startSession asks w for a new session and returns its token and user id.
func startSession(t *testing.T, w *testWriter, headers ...string) (token, user string) {
	t.Helper()
	got := w.do(t, http.MethodPost, "/session", headers...)
	token, _ = got.Body["token"].(string)
	user, _ = got.Body["user_id"].(string)
	exp, _ := got.Body["expires_at"].(float64)
	if got.Status != http.StatusOK || token == "" || user == "" {
		t.Fatalf("POST /session: %d %s; want 200 with token and user_id", got.Status, got.Raw)
	}
	if d := time.Until(time.Unix(int64(exp), 0)); d < 59*time.Minute || d > time.Hour+time.Second {
		t.Errorf("expires_at in %v; want SESSION_TTL (1h)", d)
	}
	return token, user
}

// TestSessionLike: in the default mode (sessions only) a token from POST /session likes and
// reads as its user through the real router, X-User-ID is never believed, and a forged,
// malformed or foreign token is a 401 that writes nothing.
func TestSessionLike(t *testing.T) {
	w := startWriter(t, nil)
	tok, user := startSession(t, w)
	wantLike(t, w.do(t, http.MethodPost, "/like/42", "Authorization: Bearer "+tok, "X-User-ID: mallory"), "42", 1, true)
	if w.RDB.Exists(context.Background(), keys.User("42", user)).Val() != 1 {
		t.Errorf("the like was not recorded for the session's user %s", user)
	}
	wantRead(t, w.do(t, http.MethodGet, "/likes?posts=42", "Authorization: Bearer "+tok), []readEntry{{"42", 1, true}})
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		got := w.do(t, method, "/like/42", "X-User-ID: "+user)
		if got.Status != http.StatusUnauthorized || !strings.Contains(got.Raw, "POST /session") {
			t.Errorf("%s naming the session's user in X-User-ID: %d %s; want 401 that names POST /session", method, got.Status, got.Raw)
		}
	}
	if got := w.do(t, http.MethodGet, "/likes?posts=42", "X-User-ID: "+user); got.Status != http.StatusUnauthorized {
		t.Errorf("reading likes as X-User-ID: %d %s; want 401", got.Status, got.Raw)
	}
	if n := w.count(t, "42"); n != 1 {
		t.Errorf("post 42 counts %d after refused requests; want 1", n)
	}

	forged := token(t, jwt.SigningMethodHS256, []byte(testSecret), user, time.Hour, "0")
	forgedSession := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "mallory", "aud": "likes-session", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "sid_start": time.Now().Unix(),
	})
	real, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	forgedSession.Header["kid"] = real.Header["kid"] // a live kid, the wrong key
	forgedRaw, _ := forgedSession.SignedString([]byte(testSecret))
	got := w.do(t, http.MethodPost, "/like/43", "Authorization: Bearer "+forgedRaw, "X-User-ID: mallory")
	if got.Status != http.StatusUnauthorized || got.Body["error"] == nil {
		t.Errorf("like with a forged session token: %d %s; want 401 JSON", got.Status, got.Raw)
	}
	// A bearer that is no session token (the site's, with no site keys configured) names no one.
	if got := w.do(t, http.MethodPost, "/like/43", "Authorization: Bearer "+forged, "X-User-ID: carol"); got.Status != http.StatusUnauthorized {
		t.Errorf("like with a site token in the sessions-only mode: %d %s; want 401", got.Status, got.Raw)
	}
	if w.dedupKeys(t, "43") != 0 {
		t.Error("a refused token changed post 43")
	}

	// Behind a trusted gateway, a bearer that is no session token is not the writer's business:
	// X-User-ID decides (the gateway may pass its own Authorization through).
	gw := startWriter(t, w.Redis, trustHeader)
	wantLike(t, gw.do(t, http.MethodPost, "/like/43", "Authorization: Bearer "+forged, "X-User-ID: carol"), "43", 1, true)
	if got := gw.do(t, http.MethodPost, "/like/43", "Authorization: Bearer "+forgedRaw, "X-User-ID: mallory"); got.Status != http.StatusUnauthorized {
		t.Errorf("like with a forged session token behind a gateway: %d %s; want 401", got.Status, got.Raw)
	}
	if w.dedupKeys(t, "43") != 1 || w.RDB.Exists(context.Background(), keys.User("43", "mallory")).Val() != 0 {
		t.Error("a refused session token changed post 43")
	}

	for name, headers := range map[string][]string{
		"no token":   nil,
		"malformed":  {"Authorization: Bearer not-a-jwt"},
		"forged":     {"Authorization: Bearer " + forgedRaw},
		"site token": {"Authorization: Bearer " + forged},
		"basic":      {"Authorization: Basic YTpi"},
	} {
		got := w.do(t, http.MethodPost, "/session/refresh", headers...)
		if got.Status != http.StatusUnauthorized || got.Body["error"] == nil || got.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("refresh with %s: %d %v %s; want 401 JSON with WWW-Authenticate", name, got.Status, got.Header, got.Raw)
		}
	}
	got = w.do(t, http.MethodPost, "/session/refresh", "Authorization: Bearer "+tok)
	if got.Status != http.StatusOK || got.Body["user_id"] != user || got.Body["token"] == "" {
		t.Errorf("refresh: %d %s; want 200 with user_id %s", got.Status, got.Raw, user)
	}
	if got := w.do(t, http.MethodGet, "/session"); got.Status != http.StatusMethodNotAllowed {
		t.Errorf("GET /session: %d; want 405", got.Status)
	}
	if got := w.do(t, http.MethodGet, "/metrics"); !strings.Contains(got.Raw, "likes_writer_sessions_issued_total 1") ||
		!strings.Contains(got.Raw, "likes_writer_sessions_refreshed_total 1") || !strings.Contains(got.Raw, "likes_writer_session_refusals_total 5") {
		t.Error("session metrics not counted: want 1 issued, 1 refreshed, 5 refused")
	}
}

// TestSessionsOff: with sessions turned off behind a gateway there is no /session route and a
// session-looking bearer is ignored: X-User-ID decides.
func TestSessionsOff(t *testing.T) {
	on := startWriter(t, nil)
	tok, _ := startSession(t, on)
	w := startWriter(t, on.Redis, trustHeader, "--sessions=false")
	if got := w.do(t, http.MethodPost, "/session"); got.Status != http.StatusNotFound {
		t.Errorf("POST /session with --sessions=false: %d; want 404", got.Status)
	}
	wantLike(t, w.do(t, http.MethodPost, "/like/9", "Authorization: Bearer "+tok, "X-User-ID: carol"), "9", 1, true)
	if w.dedupKeys(t, "9") != 1 || w.RDB.Exists(context.Background(), keys.User("9", "carol")).Val() != 1 {
		t.Error("with sessions off, the like was not carol's (X-User-ID)")
	}
}

// TestSessionSharedAcrossWriters: two writers on one Redis share the signing key the first one
// created, so a session started on one likes on the other.
func TestSessionSharedAcrossWriters(t *testing.T) {
	srv := redistest.Start(t)
	a := startWriter(t, srv, "--sessions")
	b := startWriter(t, srv, "--sessions")
	tok, user := startSession(t, a)
	wantLike(t, b.do(t, http.MethodPost, "/like/7", "Authorization: Bearer "+tok), "7", 1, true)
	if b.RDB.Exists(context.Background(), keys.User("7", user)).Val() != 1 {
		t.Error("like on the other writer not recorded for the session's user")
	}
	if got := b.do(t, http.MethodPost, "/session/refresh", "Authorization: Bearer "+tok); got.Status != 200 || got.Body["user_id"] != user {
		t.Errorf("refresh on the other writer: %d %s", got.Status, got.Raw)
	}
	if n := len(b.RDB.Keys(context.Background(), keys.SessionKey("*")).Val()); n != 1 {
		t.Errorf("%d session keys in Redis; want the one both writers share", n)
	}
}

// TestSessionWithSiteJWT: with the site's own HS256 tokens required, session tokens are accepted
// beside them, X-User-ID is not.
func TestSessionWithSiteJWT(t *testing.T) {
	w := startWriter(t, nil, "--sessions", "--auth-jwt-secret", testSecret)
	tok, _ := startSession(t, w)
	wantLike(t, w.do(t, http.MethodPost, "/like/1", "Authorization: Bearer "+tok), "1", 1, true)
	site := token(t, jwt.SigningMethodHS256, []byte(testSecret), "alice", time.Hour, "")
	wantLike(t, w.do(t, http.MethodPost, "/like/1", "Authorization: Bearer "+site), "1", 2, true)
	if got := w.like(t, "1", "mallory"); got.Status != http.StatusUnauthorized {
		t.Errorf("X-User-ID with site tokens required: %d; want 401", got.Status)
	}
	// A site-signed token claiming the session audience is not a session token.
	forged := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "mallory", "aud": "likes-session",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "sid_start": time.Now().Unix()})
	raw, _ := forged.SignedString([]byte(testSecret))
	if got := w.do(t, http.MethodPost, "/like/1", "Authorization: Bearer "+raw); got.Status != http.StatusUnauthorized {
		t.Errorf("site-signed token with the session audience: %d %s; want 401", got.Status, got.Raw)
	}
}

// TestSessionRateLimit: issuing is limited per client address across replicas (429 with
// Retry-After, no key, no session); X-Forwarded-For names the client only when the peer is in
// TRUSTED_PROXIES.
func TestSessionRateLimit(t *testing.T) {
	srv := redistest.Start(t)
	a := startWriter(t, srv, "--sessions", "--session-rate", "2/1m")
	b := startWriter(t, srv, "--sessions", "--session-rate", "2/1m")
	startSession(t, a, "X-Forwarded-For: 198.51.100.1")
	startSession(t, b, "X-Forwarded-For: 198.51.100.2") // ignored: the peer is no trusted proxy
	for name, w := range map[string]*testWriter{"same writer": a, "other writer": b} {
		got := w.do(t, http.MethodPost, "/session", "X-Forwarded-For: 198.51.100.3")
		retry, _ := strconv.Atoi(got.Header.Get("Retry-After"))
		if got.Status != http.StatusTooManyRequests || retry < 1 || retry > 60 || got.Body["error"] == nil || got.Body["token"] != nil {
			t.Errorf("%s: third session from 127.0.0.1: %d Retry-After %q %s; want 429 JSON with Retry-After 1-60",
				name, got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
	}
	if ttl := a.RDB.PTTL(context.Background(), keys.SessionRate("127.0.0.1")).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("rate counter of 127.0.0.1 ttl %v; want within (0, 1m]", ttl)
	}

	proxied := startWriter(t, redistest.Start(t), "--sessions", "--session-rate", "2/1m", "--trusted-proxies", "127.0.0.0/8")
	for range 2 {
		startSession(t, proxied, "X-Forwarded-For: 203.0.113.9")
	}
	if got := proxied.do(t, http.MethodPost, "/session", "X-Forwarded-For: 203.0.113.9"); got.Status != http.StatusTooManyRequests {
		t.Errorf("third session for 203.0.113.9 behind a trusted proxy: %d; want 429", got.Status)
	}
	startSession(t, proxied, "X-Forwarded-For: 203.0.113.10")          // another client behind the proxy
	startSession(t, proxied, "X-Forwarded-For: 6.6.6.6, 203.0.113.11") // the client's own hop is not believed
	if got := proxied.do(t, http.MethodPost, "/session", "X-Forwarded-For: 7.7.7.7, 203.0.113.11"); got.Status != 200 {
		t.Errorf("second session of 203.0.113.11: %d; want 200", got.Status)
	}
	if got := proxied.do(t, http.MethodPost, "/session", "X-Forwarded-For: 8.8.8.8, 203.0.113.11"); got.Status != http.StatusTooManyRequests {
		t.Errorf("third session of 203.0.113.11 under a spoofed left hop: %d; want 429", got.Status)
	}
	if got := a.do(t, http.MethodGet, "/metrics"); !strings.Contains(got.Raw, "likes_writer_session_rate_limited_total 1") {
		t.Error("rate-limited issue not counted")
	}
}

// TestSessionRedisDown: with Redis stopped, POST /session answers 503 with Retry-After within
// the request timeout.
func TestSessionRedisDown(t *testing.T) {
	const timeout = 500 * time.Millisecond
	w := startWriter(t, nil, "--sessions", "--request-timeout", timeout.String(), "--redis-timeout", timeout.String())
	tok, _ := startSession(t, w)
	w.Redis.Kill()
	start := time.Now()
	got := w.do(t, http.MethodPost, "/session")
	if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" || got.Body["error"] == nil || got.Body["token"] != nil {
		t.Errorf("POST /session with Redis down: %d %v %s; want 503 JSON with Retry-After", got.Status, got.Header, got.Raw)
	}
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("took %s; want within the %s request timeout", took, timeout)
	}
	if got := w.do(t, http.MethodPost, "/like/1", "Authorization: Bearer "+tok); got.Status != http.StatusServiceUnavailable {
		t.Errorf("like with a good token and Redis down: %d; want 503 (not 401)", got.Status)
	}
}

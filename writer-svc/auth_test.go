package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/testkit/redistest"
)

const testSecret = "an-hs256-secret-of-at-least-32-bytes"

func token(t *testing.T, method jwt.SigningMethod, key any, sub string, exp time.Duration, kid string) string {
	t.Helper()
	return tokenFor(t, method, key, sub, "", exp, kid)
}

// tokenFor is token with an aud claim (none when aud is empty).
func tokenFor(t *testing.T, method jwt.SigningMethod, key any, sub, aud string, exp time.Duration, kid string) string {
	t.Helper()
	claims := jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(time.Now().Add(exp))}
	if aud != "" {
		claims.Audience = jwt.ClaimStrings{aud}
	}
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJWTAuth: with a secret configured the user comes only from a valid token's sub; the
// X-User-ID header is ignored, and every bad token is a 401 that writes nothing.
func TestJWTAuth(t *testing.T) {
	w := startWriter(t, nil, "--auth-jwt-secret", testSecret)
	valid := token(t, jwt.SigningMethodHS256, []byte(testSecret), "alice", time.Hour, "")
	got := w.do(t, "POST", "/like/42", "Authorization: Bearer "+valid, "X-User-ID: mallory")
	wantLike(t, got, "42", 1, true)
	if w.RDB.Exists(context.Background(), keys.User("42", "alice")).Val() != 1 {
		t.Error("the like was not recorded for the token's subject")
	}

	bad := []struct {
		name    string
		headers []string
	}{
		{"header only", []string{"X-User-ID: mallory"}},
		{"forged", []string{"Authorization: Bearer " + token(t, jwt.SigningMethodHS256, []byte("not-the-secret-not-the-secret-000"), "mallory", time.Hour, "")}},
		{"expired", []string{"Authorization: Bearer " + token(t, jwt.SigningMethodHS256, []byte(testSecret), "mallory", -time.Minute, "")}},
		{"alg none", []string{"Authorization: Bearer " + token(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "mallory", time.Hour, "")}},
		{"malformed", []string{"Authorization: Bearer not-a-jwt"}},
		{"basic", []string{"Authorization: Basic bWFsbG9yeTpwdw=="}},
	}
	for _, tt := range bad {
		for _, method := range []string{"POST", "DELETE"} {
			got := w.do(t, method, "/like/42", tt.headers...)
			if got.Status != 401 || got.Body["error"] == nil || !strings.HasPrefix(got.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s: %d %v %s; want 401 JSON with WWW-Authenticate", tt.name, method, got.Status, got.Header, got.Raw)
			}
		}
	}
	if n := w.dedupKeys(t, "42"); n != 1 || w.count(t, "42") != 1 {
		t.Errorf("after refused tokens: %d dedup keys, count %d; want 1 and 1", n, w.count(t, "42"))
	}
	if got := w.do(t, "GET", "/count/42"); got.Status != 200 {
		t.Errorf("GET /count without a token: %d; want 200 (reads are public)", got.Status)
	}
	wantLike(t, w.do(t, "DELETE", "/like/42", "Authorization: Bearer "+valid), "42", 0, false)
	if got := w.do(t, "GET", "/metrics"); !strings.Contains(got.Raw, "likes_writer_auth_failures_total 12") {
		t.Error("auth failures not counted 12 times")
	}
}

// TestJWKSAuth wires AUTH_JWKS_URL end to end: a token signed by the provider's published key is
// accepted, one signed by another key under the same kid is not.
func TestJWKSAuth(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwk, err := jwkset.NewJWKFromKey(&key.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "k1", ALG: jwkset.AlgES256}})
	if err != nil {
		t.Fatal(err)
	}
	store := jwkset.NewMemoryStorage()
	if err := store.KeyWrite(context.Background(), jwk); err != nil {
		t.Fatal(err)
	}
	set, err := store.JSONPublic(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(set) }))
	defer idp.Close()

	// A JWKS needs an audience: the identity provider's keys sign tokens for other APIs too.
	w := startWriter(t, nil, "--auth-jwks-url", idp.URL, "--auth-jwt-audience", "likes-api")
	wantLike(t, w.do(t, "POST", "/like/7", "Authorization: Bearer "+tokenFor(t, jwt.SigningMethodES256, key, "alice", "likes-api", time.Hour, "k1")), "7", 1, true)
	for name, raw := range map[string]string{
		"signed by another key":       tokenFor(t, jwt.SigningMethodES256, other, "mallory", "likes-api", time.Hour, "k1"),
		"HS256 with only a JWKS":      tokenFor(t, jwt.SigningMethodHS256, []byte(testSecret), "mallory", "likes-api", time.Hour, "k1"),
		"issued for another API":      tokenFor(t, jwt.SigningMethodES256, key, "mallory", "billing-api", time.Hour, "k1"),
		"without an audience":         token(t, jwt.SigningMethodES256, key, "mallory", time.Hour, "k1"),
		"with the sessions' audience": tokenFor(t, jwt.SigningMethodES256, key, "mallory", "likes-session", time.Hour, "k1"),
	} {
		if got := w.do(t, "POST", "/like/7", "Authorization: Bearer "+raw); got.Status != 401 {
			t.Errorf("token %s: %d %s; want 401", name, got.Status, got.Raw)
		}
	}
	if n := w.count(t, "7"); n != 1 {
		t.Errorf("post 7 counts %d after refused tokens; want 1", n)
	}
}

// TestLikeRateLimit: with LIKE_RATE=1/3s a user's second like within 3 s is a 429 with
// Retry-After on any replica (the counter is in Redis), and changes nothing.
func TestLikeRateLimit(t *testing.T) {
	srv := redistest.Start(t)
	a := startWriter(t, srv, trustHeader, "--like-rate", "1/3s")
	b := startWriter(t, srv, trustHeader, "--like-rate", "1/3s")
	wantLike(t, a.like(t, "p1", "alice"), "p1", 1, true)
	for name, w := range map[string]*testWriter{"same replica": a, "other replica": b} {
		got := w.like(t, "p2", "alice")
		retry, _ := strconv.Atoi(got.Header.Get("Retry-After"))
		if got.Status != 429 || retry < 1 || retry > 3 || got.Body["error"] == nil {
			t.Errorf("%s: second like within 3s: %d Retry-After %q %s; want 429 with Retry-After 1-3", name, got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
	}
	if n := a.count(t, "p2"); n != 0 || a.dedupKeys(t, "p2") != 0 {
		t.Errorf("a refused like changed post p2 (count %d)", n)
	}
	wantLike(t, b.like(t, "p2", "bob"), "p2", 1, true)
	wantLike(t, a.do(t, "DELETE", "/like/p1", "X-User-ID: alice"), "p1", 0, false)
	if got := a.do(t, "GET", "/metrics"); !strings.Contains(got.Raw, "likes_writer_rate_limited_total 1") {
		t.Error("rate-limited like not counted")
	}
	if ttl := a.RDB.PTTL(context.Background(), "likes:rate:alice").Val(); ttl <= 0 || ttl > 3*time.Second {
		t.Errorf("rate key ttl %v; want within (0, 3s]", ttl)
	}
}

// TestLikeRatePerPost: with LIKE_RATE_PER_POST a user's budget is per post: likes of other posts
// pass, toggling one post is held to the rate.
func TestLikeRatePerPost(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--like-rate", "1/1m", "--like-rate-per-post")
	wantLike(t, w.like(t, "p1", "alice"), "p1", 1, true)
	wantLike(t, w.like(t, "p2", "alice"), "p2", 1, true) // another post, its own budget
	wantLike(t, w.do(t, http.MethodDelete, "/like/p1", "X-User-ID: alice"), "p1", 0, false)
	if got := w.like(t, "p1", "alice"); got.Status != http.StatusTooManyRequests {
		t.Errorf("liking p1 again within the minute: %d %s; want 429", got.Status, got.Raw)
	}
	if n := w.count(t, "p1"); n != 0 {
		t.Errorf("the refused like changed p1: count %d", n)
	}
	if w.RDB.Exists(context.Background(), keys.RateLimit("alice:p1")).Val() != 1 {
		t.Error("no per-post rate key for alice and p1")
	}
}

// TestLikeAddrRateLimit: LIKE_ADDR_RATE holds all the users behind one client address to one
// budget on every replica (fresh users from one address cannot outlike it), tells the address
// from X-Forwarded-For only when a trusted proxy sends it, and refuses with 429 and Retry-After
// without changing anything.
func TestLikeAddrRateLimit(t *testing.T) {
	srv := redistest.Start(t)
	flags := []string{trustHeader, "--like-addr-rate", "3/1m burst 3", "--trusted-proxies", "127.0.0.1/32"}
	a, b := startWriter(t, srv, flags...), startWriter(t, srv, flags...)
	from := func(w *testWriter, user, addr string) reply {
		return w.do(t, http.MethodPost, "/like/farm", "X-User-ID: "+user, "X-Forwarded-For: "+addr)
	}
	for i, w := range []*testWriter{a, b, a} {
		wantLike(t, from(w, "fresh-"+strconv.Itoa(i), "203.0.113.7"), "farm", i+1, true)
	}
	for name, w := range map[string]*testWriter{"same replica": a, "other replica": b} {
		got := from(w, "fresh-"+strings.ReplaceAll(name, " ", "-"), "203.0.113.7")
		retry, _ := strconv.Atoi(got.Header.Get("Retry-After"))
		if got.Status != http.StatusTooManyRequests || retry < 1 || retry > 20 || !strings.Contains(got.Raw, "from this address") {
			t.Errorf("%s: a fourth user from one address: %d Retry-After %q %s; want 429 naming the address with Retry-After 1-20",
				name, got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
	}
	// Unlikes spend the same budget: a flood of them would cost a script call each.
	if got := a.do(t, http.MethodDelete, "/like/farm", "X-User-ID: fresh-0", "X-Forwarded-For: 203.0.113.7"); got.Status != http.StatusTooManyRequests {
		t.Errorf("an unlike from the address past its budget: %d %s; want 429", got.Status, got.Raw)
	}
	if n := a.count(t, "farm"); n != 3 || a.dedupKeys(t, "farm") != 3 {
		t.Errorf("refused likes or unlikes changed post farm: count %d; want 3", n)
	}
	wantLike(t, from(b, "neighbour", "203.0.113.8"), "farm", 4, true) // another address has its own budget
	if ttl := a.RDB.PTTL(context.Background(), keys.LikeAddrRate("203.0.113.7")).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("address rate key ttl %v; want within (0, 1m]", ttl)
	}

	// Without a trusted proxy the header is the client's own claim: the peer address counts.
	direct := startWriter(t, srv, trustHeader, "--like-addr-rate", "1/1m")
	wantLike(t, direct.do(t, http.MethodPost, "/like/d", "X-User-ID: u1", "X-Forwarded-For: 198.51.100.1"), "d", 1, true)
	if got := direct.do(t, http.MethodPost, "/like/d", "X-User-ID: u2", "X-Forwarded-For: 198.51.100.2"); got.Status != http.StatusTooManyRequests {
		t.Errorf("a second user from the same peer with a made-up X-Forwarded-For: %d %s; want 429", got.Status, got.Raw)
	}
}

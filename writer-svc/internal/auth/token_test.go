package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap/zaptest"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func claims(sub string, exp time.Duration) jwt.RegisteredClaims {
	return jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(time.Now().Add(exp))}
}

func sign(t testing.TB, method jwt.SigningMethod, c jwt.Claims, key any, kid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// verifyCase is a token and the subject Verify must return for it ("" means refused).
type verifyCase struct {
	name  string
	token string
	want  string
}

func checkVerify(t *testing.T, v *Token, tests []verifyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), tt.token)
			if tt.want == "" {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Errorf("got %q, %v; want ErrUnauthenticated", got, err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestTokenHS256(t *testing.T) {
	v, err := NewToken(TokenOptions{Secret: testSecret, Audience: "likes", Issuer: "idp"})
	if err != nil {
		t.Fatal(err)
	}
	good := func(sub string, exp time.Duration) jwt.RegisteredClaims {
		c := claims(sub, exp)
		c.Audience = jwt.ClaimStrings{"likes"}
		c.Issuer = "idp"
		return c
	}
	noExp := good("alice", time.Hour)
	noExp.ExpiresAt = nil
	otherAud := good("alice", time.Hour)
	otherAud.Audience = jwt.ClaimStrings{"billing"}
	otherIss := good("alice", time.Hour)
	otherIss.Issuer = "evil"
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

	tests := []verifyCase{
		{"valid", sign(t, jwt.SigningMethodHS256, good("alice", time.Hour), testSecret, ""), "alice"},
		{"forged with another secret", sign(t, jwt.SigningMethodHS256, good("alice", time.Hour), []byte("another-secret-another-secret-00"), ""), ""},
		{"expired", sign(t, jwt.SigningMethodHS256, good("alice", -time.Minute), testSecret, ""), ""},
		{"no expiry", sign(t, jwt.SigningMethodHS256, noExp, testSecret, ""), ""},
		{"alg none", sign(t, jwt.SigningMethodNone, good("alice", time.Hour), jwt.UnsafeAllowNoneSignatureType, ""), ""},
		{"HS512 with the secret", sign(t, jwt.SigningMethodHS512, good("alice", time.Hour), testSecret, ""), ""},
		{"ES256 without a key set", sign(t, jwt.SigningMethodES256, good("alice", time.Hour), ecKey, "k"), ""},
		{"wrong audience", sign(t, jwt.SigningMethodHS256, otherAud, testSecret, ""), ""},
		{"wrong issuer", sign(t, jwt.SigningMethodHS256, otherIss, testSecret, ""), ""},
		{"no subject", sign(t, jwt.SigningMethodHS256, good("", time.Hour), testSecret, ""), ""},
		{"invalid subject", sign(t, jwt.SigningMethodHS256, good("a:b", time.Hour), testSecret, ""), ""},
		{"benchmark user", sign(t, jwt.SigningMethodHS256, good("bench-alice", time.Hour), testSecret, ""), ""},
		{"near the benchmark namespace", sign(t, jwt.SigningMethodHS256, good("benchmark-alice", time.Hour), testSecret, ""), "benchmark-alice"},
		{"garbage", "not.a.jwt", ""},
	}
	checkVerify(t, v, tests)
}

func TestTokenFromRequest(t *testing.T) {
	v, err := NewToken(TokenOptions{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, jwt.SigningMethodHS256, claims("alice", time.Hour), testSecret, "")
	tests := []struct {
		name   string
		header []string
		want   string
	}{
		{"bearer", []string{"Bearer " + tok}, "alice"},
		{"missing", nil, ""},
		{"two headers", []string{"Bearer " + tok, "Bearer " + tok}, ""},
		{"basic", []string{"Basic YTpi"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/like/1", nil)
			r.Header.Set(HeaderName, "mallory") // ignored when tokens are required
			for _, h := range tt.header {
				r.Header.Add("Authorization", h)
			}
			got, err := v.UserID(r)
			if tt.want == "" {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Errorf("got %q, %v; want ErrUnauthenticated", got, err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// jwksServer serves a JWKS that the test can rotate, and counts fetches.
type jwksServer struct {
	*httptest.Server
	body    atomic.Value // []byte
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{}
	s.body.Store([]byte(`{"keys":[]}`))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.body.Load().([]byte))
	}))
	t.Cleanup(s.Close)
	return s
}

// publish replaces the served key set with keys (kid -> public key, alg).
func (s *jwksServer) publish(t *testing.T, keys ...jwkset.JWK) {
	t.Helper()
	store := jwkset.NewMemoryStorage()
	for _, k := range keys {
		if err := store.KeyWrite(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := store.JSONPublic(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.body.Store([]byte(raw))
}

func newJWK(t *testing.T, key any, kid string, alg jwkset.ALG) jwkset.JWK {
	t.Helper()
	k, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: alg, USE: jwkset.UseSig}})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestTokenJWKS(t *testing.T) {
	ec1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	attacker, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	srv := newJWKSServer(t)
	srv.publish(t, newJWK(t, &ec1.PublicKey, "ec1", jwkset.AlgES256), newJWK(t, edPub, "ed1", jwkset.AlgEdDSA))

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // stops the refresh goroutine
	keys, err := NewJWKS(ctx, JWKSOptions{URL: srv.URL, Refresh: time.Hour, UnknownKIDEvery: time.Millisecond}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewToken(TokenOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	ec1DER, _ := x509.MarshalPKIXPublicKey(&ec1.PublicKey)
	c := claims("alice", time.Hour)
	tests := []verifyCase{
		{"ES256", sign(t, jwt.SigningMethodES256, c, ec1, "ec1"), "alice"},
		{"EdDSA", sign(t, jwt.SigningMethodEdDSA, c, edPriv, "ed1"), "alice"},
		{"forged: attacker key under a published kid", sign(t, jwt.SigningMethodES256, c, attacker, "ec1"), ""},
		{"unknown kid", sign(t, jwt.SigningMethodES256, c, attacker, "nope"), ""},
		{"no kid", sign(t, jwt.SigningMethodES256, c, ec1, ""), ""},
		{"alg confusion: HS256 keyed with the public key", sign(t, jwt.SigningMethodHS256, c, ec1DER, "ec1"), ""},
		{"alg none", sign(t, jwt.SigningMethodNone, c, jwt.UnsafeAllowNoneSignatureType, "ec1"), ""},
		{"expired", sign(t, jwt.SigningMethodES256, claims("alice", -time.Second), ec1, "ec1"), ""},
		{"key published for another alg", sign(t, jwt.SigningMethodES256, c, ec1, "ed1"), ""},
	}
	checkVerify(t, v, tests)

	// Key rotation: a token signed with a key published after the first fetch is accepted,
	// because an unknown kid refetches the set.
	srv.publish(t, newJWK(t, &ec2.PublicKey, "ec2", jwkset.AlgES256))
	before := srv.fetches.Load()
	if got, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodES256, c, ec2, "ec2")); err != nil || got != "alice" {
		t.Errorf("after rotation: got %q, %v; want alice", got, err)
	}
	if srv.fetches.Load() == before {
		t.Error("the rotated key was accepted without refetching the JWKS")
	}
	// And the rotated-out key is gone with the refetch.
	if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodES256, c, ec1, "ec1")); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("token of a revoked key: %v; want ErrUnauthenticated", err)
	}
}

// FuzzVerify feeds arbitrary strings to the token parser: it must never panic and can accept
// only a token it was given as validly signed.
func FuzzVerify(f *testing.F) {
	v, err := NewToken(TokenOptions{Secret: testSecret})
	if err != nil {
		f.Fatal(err)
	}
	valid := sign(f, jwt.SigningMethodHS256, claims("alice", 24*time.Hour), testSecret, "")
	f.Add(valid)
	f.Add(sign(f, jwt.SigningMethodNone, claims("alice", time.Hour), jwt.UnsafeAllowNoneSignatureType, ""))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, raw string) {
		sub, err := v.Verify(context.Background(), raw)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("Verify(%q): error %v is not ErrUnauthenticated", raw, err)
			}
			return
		}
		if sub != "alice" {
			t.Fatalf("Verify(%q) accepted subject %q", raw, sub)
		}
	})
}

package session

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/sessiontokentest"
	"github.com/likes/likes/writer-svc/internal/auth"
)

var ctx = context.Background()

func mustIssue(t *testing.T, s *Issuer) Session {
	t.Helper()
	got, err := s.Issue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wantUser(t *testing.T, s *Issuer, raw, user string) {
	t.Helper()
	if got, err := s.Verify(ctx, raw); err != nil || got != user {
		t.Errorf("Verify = %q, %v; want %q", got, err, user)
	}
}

func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("%s: %v; want ErrUnauthenticated", what, err)
	}
}

// TestIssue: a session is a fresh valid user id and an HS256 token for it with the claims the
// format promises.
func TestIssue(t *testing.T) {
	clk := sessiontokentest.NewClock(time.Hour)
	s := newIssuer(t, redistest.Start(t).Client(t), testOptions(clk))
	a, b := mustIssue(t, s), mustIssue(t, s)
	if a.UserID == b.UserID {
		t.Errorf("two sessions share user id %q", a.UserID)
	}
	for _, u := range []string{a.UserID, b.UserID} {
		if err := ids.ValidUserID(u); err != nil || !strings.HasPrefix(u, userIDPrefix) {
			t.Errorf("user id %q: %v; want a valid %s… id", u, err, userIDPrefix)
		}
	}
	kid, c := parsed(t, a.Token)
	now := clk.Now().Unix() // one second into a rotation period, whose start names its key
	if kid != strconv.FormatInt(now-1, 10) || c.Subject != a.UserID || c.Start != now || c.IssuedAt.Unix() != now ||
		c.ExpiresAt.Unix() != now+600 || a.ExpiresAt != now+600 || len(c.Audience) != 1 || c.Audience[0] != sessiontoken.Audience {
		t.Errorf("token kid %q claims %+v, reply %+v; want kid of the current period, sub = user, sid_start = iat = now, exp = now+10m, aud %s",
			kid, c, a, sessiontoken.Audience)
	}
	if !auth.IsSessionToken(a.Token) {
		t.Error("IsSessionToken(session token) = false")
	}
	wantUser(t, s, a.Token, a.UserID)
}

// TestRefresh: a refresh keeps the user and the session start, works up to RefreshGrace after
// expiry, and stops at MaxAge (the last token expires exactly then).
func TestRefresh(t *testing.T) {
	clk := sessiontokentest.NewClock(24 * time.Hour)
	o := testOptions(clk)
	o.KeyRotate = 24 * time.Hour // one key for the whole session
	o.MaxAge = 2 * time.Hour
	maxAge := int64(7200)
	s := newIssuer(t, redistest.Start(t).Client(t), o)
	first := mustIssue(t, s)
	began := clk.Now().Unix()

	clk.Advance(5 * time.Minute)
	second, err := s.Refresh(ctx, first.Token)
	if err != nil {
		t.Fatal(err)
	}
	_, c := parsed(t, second.Token)
	if second.UserID != first.UserID || c.Subject != first.UserID || c.Start != began || second.ExpiresAt != clk.Now().Unix()+600 {
		t.Errorf("refreshed %+v claims %+v; want user %s, sid_start %d, exp now+10m", second, c, first.UserID, began)
	}
	wantUser(t, s, second.Token, first.UserID)

	clk.Advance(10*time.Minute + 15*time.Minute) // expired 15m ago, grace 20m
	_, err = s.Verify(ctx, second.Token)
	wantRefused(t, "like with an expired token", err)
	third, err := s.Refresh(ctx, second.Token)
	if err != nil || third.UserID != first.UserID {
		t.Fatalf("refresh 15m after expiry: %+v, %v; want the same user", third, err)
	}

	clk.Advance(10*time.Minute + 21*time.Minute) // expired 21m ago
	_, err = s.Refresh(ctx, third.Token)
	wantRefused(t, "refresh past the grace", err)

	// Refreshing every 9 minutes reaches the max age (2h): the last token expires exactly then.
	cur := third
	clk.Advance(-31 * time.Minute)
	for clk.Now().Unix()+9*60 < began+maxAge {
		clk.Advance(9 * time.Minute)
		next, err := s.Refresh(ctx, cur.Token)
		if err != nil {
			t.Fatalf("refresh at +%ds: %v", clk.Now().Unix()-began, err)
		}
		if next.ExpiresAt > began+maxAge {
			t.Fatalf("token expires at +%ds, past the max age", next.ExpiresAt-began)
		}
		cur = next
	}
	if cur.ExpiresAt != began+maxAge {
		t.Errorf("last token expires at +%ds; want exactly the max age", cur.ExpiresAt-began)
	}
	clk.Advance(time.Duration(began+maxAge-clk.Now().Unix()) * time.Second)
	_, err = s.Refresh(ctx, cur.Token)
	if !errors.Is(err, ErrTooOld) || !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("refresh at the max age: %v; want ErrTooOld (a 401)", err)
	}
}

// TestForgedTokensRefused: nothing but a token signed by a live key with the session's claims
// verifies or refreshes.
func TestForgedTokensRefused(t *testing.T) {
	clk := sessiontokentest.NewClock(time.Hour)
	srv := redistest.Start(t)
	s := newIssuer(t, srv.Client(t), testOptions(clk))
	good := mustIssue(t, s)
	kid, c := parsed(t, good.Token)
	secret := sessiontokentest.Secret(t, srv.Client(t), testKeys, kid)
	with := func(f func(*sessiontoken.Claims)) sessiontoken.Claims { cc := c; f(&cc); return cc }
	parts := strings.Split(good.Token, ".")
	_, other := parsed(t, mustIssue(t, s).Token)
	otherPayload := strings.Split(forge(t, other, kid, []byte("x")), ".")[1]

	tests := map[string]string{
		"another secret":      forge(t, c, kid, []byte("an-attacker-secret-of-32-bytes!!")),
		"payload swapped":     parts[0] + "." + otherPayload + "." + parts[2],
		"unknown kid":         forge(t, c, "12345", secret),
		"kid far in future":   forge(t, c, strconv.FormatInt(clk.Now().Unix()+86400, 10), secret),
		"no kid":              forge(t, c, "", secret),
		"static kid":          forge(t, c, sessiontoken.StaticKID, secret),
		"site audience":       forge(t, with(func(c *sessiontoken.Claims) { c.Audience = jwt.ClaimStrings{"likes"} }), kid, secret),
		"no expiry":           forge(t, with(func(c *sessiontoken.Claims) { c.ExpiresAt = nil }), kid, secret),
		"no sid_start":        forge(t, with(func(c *sessiontoken.Claims) { c.Start = 0 }), kid, secret),
		"sid_start after iat": forge(t, with(func(c *sessiontoken.Claims) { c.Start = c.IssuedAt.Unix() + 1 }), kid, secret),
		"bad subject":         forge(t, with(func(c *sessiontoken.Claims) { c.Subject = "a:b" }), kid, secret),
		"garbage":             "not.a.jwt",
	}
	none := jwt.NewWithClaims(jwt.SigningMethodNone, c)
	none.Header["kid"] = kid
	tests["alg none"], _ = none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	hs512 := jwt.NewWithClaims(jwt.SigningMethodHS512, c)
	hs512.Header["kid"] = kid
	tests["HS512"], _ = hs512.SignedString(secret)

	for name, raw := range tests {
		_, err := s.Verify(ctx, raw)
		wantRefused(t, name+": verify", err)
		_, err = s.Refresh(ctx, raw)
		wantRefused(t, name+": refresh", err)
	}
	wantUser(t, s, good.Token, good.UserID)
}

// TestStaticSecret: AUTH_SESSION_SECRET signs with kid "static" and needs no Redis at all.
func TestStaticSecret(t *testing.T) {
	clk := sessiontokentest.NewClock(time.Hour)
	o := testOptions(clk)
	o.Secret = []byte("0123456789abcdef0123456789abcdef")
	s := newIssuer(t, nil, o)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	tok := mustIssue(t, s)
	if kid, _ := parsed(t, tok.Token); kid != sessiontoken.StaticKID {
		t.Errorf("kid %q; want %q", kid, sessiontoken.StaticKID)
	}
	wantUser(t, s, tok.Token, tok.UserID)
	other := newIssuer(t, nil, o) // another replica with the same secret
	wantUser(t, other, tok.Token, tok.UserID)
	clk.Advance(5 * time.Minute)
	if got, err := other.Refresh(ctx, tok.Token); err != nil || got.UserID != tok.UserID {
		t.Errorf("refresh: %+v, %v", got, err)
	}
}

// TestRedisDownIsUnavailable: with Redis gone, issuing (no key yet) and verifying a token whose
// key must be looked up fail as ErrUnavailable, a 503, never as a 401 that would make a client
// throw its good token away.
func TestRedisDownIsUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	a := newIssuer(t, srv.Client(t), testOptions(clk))
	tok := mustIssue(t, a)
	b := newIssuer(t, srv.Client(t), testOptions(clk)) // has not read the key yet
	srv.Kill()
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := b.Issue(c); !errors.Is(err, sessiontoken.ErrUnavailable) || errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("issue with Redis down: %v; want ErrUnavailable", err)
	}
	if _, err := b.Verify(c, tok.Token); !errors.Is(err, sessiontoken.ErrUnavailable) || errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("verify needing a key lookup with Redis down: %v; want ErrUnavailable", err)
	}
	wantUser(t, a, tok.Token, tok.UserID) // a writer that holds the key verifies without Redis
}

// TestOptionsValidate: the writer's own settings are checked here, the keys' by
// sessiontoken.KeyringOptions, which must see a token's whole life (ttl + grace) and the secret.
func TestOptionsValidate(t *testing.T) {
	d := DefaultOptions()
	if err := d.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := map[string]func(*Options){
		"ttl below 1s":      func(o *Options) { o.TTL = 500 * time.Millisecond },
		"negative grace":    func(o *Options) { o.RefreshGrace = -time.Second },
		"max age below ttl": func(o *Options) { o.MaxAge = o.TTL - time.Second },
		"short secret":      func(o *Options) { o.Secret = []byte("short") },
		// A token lives 1h + 24h of grace: 10m periods would keep over a hundred keys live.
		"too many live keys": func(o *Options) { o.KeyRotate = 10 * time.Minute },
	}
	for name, f := range tests {
		o := d
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	o := d
	o.Secret, o.KeyRotate = []byte("0123456789abcdef0123456789abcdef"), 0
	if err := o.Validate(); err != nil {
		t.Errorf("static secret ignores rotation: %v", err)
	}
}

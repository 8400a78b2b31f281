package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// named is a Verifier that accepts every token as its user, so a test sees which one was asked.
type named string

func (n named) Verify(context.Context, string) (string, error) { return string(n), nil }

func TestChain(t *testing.T) {
	session := sign(t, jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "s", Audience: jwt.ClaimStrings{SessionAudience},
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}, testSecret, "1")
	site := sign(t, jwt.SigningMethodHS256, claims("alice", time.Hour), testSecret, "")
	trust := Chain{Sessions: named("from-session"), TrustHeader: true}
	sessionsOnly := Chain{Sessions: named("from-session")}
	siteMode := Chain{Sessions: named("from-session"), Site: named("from-site")}
	tests := []struct {
		name    string
		chain   Chain
		headers map[string]string
		want    string
		wantErr error
	}{
		{"trust: session token", trust, map[string]string{"Authorization": "Bearer " + session, HeaderName: "mallory"}, "from-session", nil},
		{"trust: header", trust, map[string]string{HeaderName: "bob"}, "bob", nil},
		{"trust: a site bearer is left to the header", trust, map[string]string{"Authorization": "Bearer " + site, HeaderName: "bob"}, "bob", nil},
		{"trust: garbage bearer is left to the header", trust, map[string]string{"Authorization": "Bearer x.y.z", HeaderName: "bob"}, "bob", nil},
		{"trust: nothing", trust, nil, "", ErrNoUser},
		{"trust without sessions: session-looking bearer is left to the header", Chain{TrustHeader: true}, map[string]string{"Authorization": "Bearer " + session, HeaderName: "bob"}, "bob", nil},
		{"sessions only: session token", sessionsOnly, map[string]string{"Authorization": "Bearer " + session, HeaderName: "mallory"}, "from-session", nil},
		{"sessions only: header refused", sessionsOnly, map[string]string{HeaderName: "bob"}, "", ErrSessionRequired},
		{"sessions only: nothing", sessionsOnly, nil, "", ErrSessionRequired},
		{"sessions only: site bearer refused", sessionsOnly, map[string]string{"Authorization": "Bearer " + site, HeaderName: "bob"}, "", ErrSessionRequired},
		{"sessions only: garbage bearer refused", sessionsOnly, map[string]string{"Authorization": "Bearer x.y.z"}, "", ErrSessionRequired},
		{"zero Chain identifies nobody", Chain{}, map[string]string{"Authorization": "Bearer " + session, HeaderName: "bob"}, "", ErrUnauthenticated},
		{"site: session token", siteMode, map[string]string{"Authorization": "Bearer " + session}, "from-session", nil},
		{"site: site token", siteMode, map[string]string{"Authorization": "Bearer " + site}, "from-site", nil},
		{"site: header refused", siteMode, map[string]string{HeaderName: "bob"}, "", ErrUnauthenticated},
		{"site wins over TrustHeader: header refused", Chain{Site: named("from-site"), TrustHeader: true}, map[string]string{HeaderName: "bob"}, "", ErrUnauthenticated},
		{"site without sessions: session token refused", Chain{Site: named("from-site")}, map[string]string{"Authorization": "Bearer " + session}, "", ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/like/1", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			got, err := tt.chain.UserID(r)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if !errors.Is(ErrSessionRequired, ErrUnauthenticated) || !strings.Contains(ErrSessionRequired.Error(), "POST /session") {
		t.Errorf("ErrSessionRequired %q must be a 401 naming POST /session", ErrSessionRequired)
	}
	if IsSessionToken(site) || IsSessionToken("not-a-jwt") || !IsSessionToken(session) {
		t.Error("IsSessionToken tells the kinds apart wrongly")
	}
}

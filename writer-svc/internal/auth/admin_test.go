package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testAdminToken is an admin token of exactly the shortest length NewAdmin accepts.
var testAdminToken = strings.Repeat("k", MinAdminTokenLen-4) + "Z9_-"

func TestNewAdminChecksTheToken(t *testing.T) {
	tests := []struct {
		name        string
		token       string
		wantErr     bool
		wantEnabled bool
	}{
		{"one character short", testAdminToken[1:], true, false},
		{"shortest accepted", testAdminToken, false, true},
		{"none", "", false, false}, // with no site verifier nothing grants admin
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewAdmin(tt.token, nil, "admin")
			if (err != nil) != tt.wantErr || a.Enabled() != tt.wantEnabled {
				t.Errorf("NewAdmin(%d characters): enabled %v, %v; want enabled %v, error %v", len(tt.token), a.Enabled(), err, tt.wantEnabled, tt.wantErr)
			}
		})
	}
}

// adminClaims are a site JWT's claims for alice with role ("" for none) and roles.
func adminClaims(role string, roles ...string) siteClaims {
	c := siteClaims{RegisteredClaims: claims("alice", time.Hour), Roles: roles}
	if role != "" {
		c.Role = roleNames{role}
	}
	return c
}

// rawRoles are a site JWT's claims for alice with the role claims as given, of any JSON shape.
func rawRoles(role, roles any) jwt.MapClaims {
	c := jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}
	if role != nil {
		c["role"] = role
	}
	if roles != nil {
		c["roles"] = roles
	}
	return c
}

// TestAdminAuthorize: the admin token or a verified site JWT naming the admin role in `role` or
// `roles` is an admin's; any other token proved is forbidden; a request without a valid bearer
// token is unauthenticated. A token with the session audience is never an admin's, even signed
// with the site's secret and naming the role.
func TestAdminAuthorize(t *testing.T) {
	site, err := NewToken(TokenOptions{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	both, err := NewAdmin(testAdminToken, site, "admin")
	if err != nil {
		t.Fatal(err)
	}
	tokenOnly, err := NewAdmin(testAdminToken, nil, "admin")
	if err != nil {
		t.Fatal(err)
	}
	siteOnly, err := NewAdmin("", site, "admin")
	if err != nil {
		t.Fatal(err)
	}
	hs := func(c jwt.Claims) string { return "Bearer " + sign(t, jwt.SigningMethodHS256, c, testSecret, "") }
	session := adminClaims("admin")
	session.Audience = jwt.ClaimStrings{SessionAudience}
	expired := adminClaims("admin")
	expired.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Minute))
	otherKey := "Bearer " + sign(t, jwt.SigningMethodHS256, adminClaims("admin"), []byte(strings.Repeat("x", 32)), "")
	admin := hs(adminClaims("admin"))

	tests := []struct {
		name   string
		admin  Admin
		header string // "" sends no Authorization header
		want   error  // nil: authorized
	}{
		{"no Authorization", both, "", ErrUnauthenticated},
		{"not a bearer", both, "Basic YTpi", ErrUnauthenticated},
		{"admin token", both, "Bearer " + testAdminToken, nil},
		{"admin token, token only", tokenOnly, "Bearer " + testAdminToken, nil},
		{"wrong token, token only", tokenOnly, "Bearer " + testAdminToken + "x", ErrForbidden},
		{"admin token's prefix, token only", tokenOnly, "Bearer " + testAdminToken[:MinAdminTokenLen-1], ErrForbidden},
		{"admin JWT, token only", tokenOnly, admin, ErrForbidden},
		{"wrong token, not a JWT either", both, "Bearer " + testAdminToken + "x", ErrUnauthenticated},
		{"role admin", both, admin, nil},
		{"role admin, site only", siteOnly, admin, nil},
		{"roles listing admin", both, hs(adminClaims("", "x", "admin")), nil},
		{"role a list with admin", both, hs(rawRoles([]string{"x", "admin"}, nil)), nil},
		{"roles one name", both, hs(rawRoles(nil, "admin")), nil},
		{"role of another shape", both, hs(rawRoles(7, map[string]any{"admin": true})), ErrForbidden},
		{"no role", both, hs(adminClaims("")), ErrForbidden},
		{"other roles", both, hs(adminClaims("x", "y", "administrator")), ErrForbidden},
		{"session audience", both, hs(session), ErrForbidden},
		{"expired", both, hs(expired), ErrUnauthenticated},
		{"signed with another key", both, otherKey, ErrUnauthenticated},
		{"admin token, site only", siteOnly, "Bearer " + testAdminToken, ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/admin/users/bob/likes", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			err := tt.admin.Authorize(r)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Authorize: %v; want %v", err, tt.want)
			}
		})
	}
}

// TestRoleClaimsNeverFailALike: the role claims come in several shapes; none of them, however
// odd, makes the token itself invalid, since every like verifies the same claims.
func TestRoleClaimsNeverFailALike(t *testing.T) {
	site, err := NewToken(TokenOptions{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		role, roles any
	}{
		{"none", nil, nil},
		{"role a name, roles a list", "admin", []string{"a", "b"}},
		{"role a list", []string{"a", "b"}, nil},
		{"roles a name", nil, "a"},
		{"numbers", 7, 8},
		{"objects", map[string]any{"a": 1}, map[string]any{}},
		{"mixed list", []any{"a", 1}, nil},
		{"null", nil, json.RawMessage("null")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := sign(t, jwt.SigningMethodHS256, rawRoles(tt.role, tt.roles), testSecret, "")
			if sub, err := site.Verify(context.Background(), tok); err != nil || sub != "alice" {
				t.Errorf("Verify: %q, %v; want alice", sub, err)
			}
		})
	}
}

// TestAdminOff: an Admin with nothing that can grant admin (the zero Admin, or a site verifier
// without a role) refuses every request, even one that would otherwise be an admin's.
func TestAdminOff(t *testing.T) {
	site, err := NewToken(TokenOptions{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	noRole, err := NewAdmin("", site, "")
	if err != nil {
		t.Fatal(err)
	}
	tok := "Bearer " + sign(t, jwt.SigningMethodHS256, adminClaims("admin"), testSecret, "")
	for name, a := range map[string]Admin{"zero Admin": {}, "site without a role": noRole} {
		for _, header := range []string{"", tok, "Bearer " + testAdminToken} {
			r := httptest.NewRequest(http.MethodGet, "/admin/users/bob/likes", nil)
			if header != "" {
				r.Header.Set("Authorization", header)
			}
			if a.Enabled() {
				t.Errorf("%s: Enabled; want not", name)
			}
			if err := a.Authorize(r); !errors.Is(err, ErrAdminOff) {
				t.Errorf("%s, Authorization %q: %v; want ErrAdminOff", name, header, err)
			}
		}
	}
}

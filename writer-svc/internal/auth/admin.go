package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
)

// ErrForbidden is a request that proved who it is but may not use the admin API: a 403.
var ErrForbidden = errors.New("forbidden: the admin API needs ADMIN_TOKEN or a site token with the admin role")

// ErrAdminOff is the admin API of a writer configured with neither an admin token nor the site's
// JWTs: every request is refused, as a 403 naming the settings.
var ErrAdminOff = errors.New("forbidden: the admin API is off: set ADMIN_TOKEN, or AUTH_JWT_SECRET or AUTH_JWKS_URL for admin-role tokens")

// MinAdminTokenLen is the shortest ADMIN_TOKEN the writer accepts: 32 characters, 192 bits or
// more of a random base64 string, far past guessing at any request rate.
const MinAdminTokenLen = 32

// Admin authorizes the admin API (another user's likes: export and erasure on request). A
// request is an admin's when its bearer token is the configured admin token (compared in
// constant time), or a site JWT, verified as for a like, whose `role` claim is Role or whose
// `roles` claim lists it. A session token never is: sessions are anonymous users. The zero Admin
// authorizes nobody.
type Admin struct {
	token [sha256.Size]byte // of the admin token; zero when none is set
	set   bool
	site  *Token // the site's JWTs; nil when not configured
	role  string
}

// NewAdmin returns the admin authorizer for token ("" for none), the site's verifier (nil for
// none) and the role that grants admin.
func NewAdmin(token string, site *Token, role string) (Admin, error) {
	a := Admin{site: site, role: role}
	if token != "" {
		if len(token) < MinAdminTokenLen {
			return Admin{}, fmt.Errorf("admin token: %d characters; want at least %d", len(token), MinAdminTokenLen)
		}
		a.token, a.set = sha256.Sum256([]byte(token)), true
	}
	return a, nil
}

// Enabled reports whether any request can be an admin's.
func (a Admin) Enabled() bool { return a.set || a.site != nil && a.role != "" }

// Authorize returns nil for an admin's request, ErrUnauthenticated (401) for a request without
// a valid bearer token, ErrForbidden (403) for anyone else, and ErrAdminOff when nothing can
// grant admin.
func (a Admin) Authorize(r *http.Request) error {
	if !a.Enabled() {
		return ErrAdminOff
	}
	raw, err := BearerToken(r)
	if err != nil {
		return err
	}
	if a.set {
		sum := sha256.Sum256([]byte(raw))
		if subtle.ConstantTimeCompare(sum[:], a.token[:]) == 1 {
			return nil
		}
	}
	if a.site == nil || IsSessionToken(raw) {
		return ErrForbidden
	}
	c, err := a.site.claims(r.Context(), raw)
	if err != nil {
		return err
	}
	if !c.hasRole(a.role) {
		return ErrForbidden
	}
	return nil
}

package auth

import (
	"errors"
	"net/http"
)

// Identifier returns the id of the user a request acts for.
type Identifier interface {
	UserID(r *http.Request) (string, error)
}

// Errors a handler maps to statuses: ErrNoUser and ids.ErrUserID are 400 (a gateway or client
// bug), ErrUnauthenticated is 401.
var (
	ErrNoUser          = errors.New("missing X-User-ID header")
	ErrManyUsers       = errors.New("more than one X-User-ID header")
	ErrUnauthenticated = errors.New("unauthenticated")
)

// HeaderName is the header a trusted gateway sets to the authenticated user id.
const HeaderName = "X-User-ID"

// Header trusts the X-User-ID header. Only safe behind a gateway that sets it.
type Header struct{}

var _ Identifier = Header{}

// UserID returns the validated X-User-ID of r.
func (Header) UserID(r *http.Request) (string, error) {
	return UserFromHeader(r.Header.Values(HeaderName))
}

package auth

import (
	"fmt"
	"net/http"
	"strings"
)

// MaxTokenLen bounds the bearer tokens we try to parse; real ones are well under 4 KiB.
const MaxTokenLen = 8 << 10

// ParseBearer extracts the token from an Authorization header value "Bearer <token>". The scheme
// is case-insensitive (RFC 9110); the token must be non-empty token68 characters.
func ParseBearer(header string) (string, error) {
	if header == "" {
		return "", fmt.Errorf("%w: missing bearer token", ErrUnauthenticated)
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: authorization scheme must be Bearer", ErrUnauthenticated)
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || len(token) > MaxTokenLen || !isToken68(token) {
		return "", fmt.Errorf("%w: malformed bearer token", ErrUnauthenticated)
	}
	return token, nil
}

// BearerToken returns the bearer token of r's one Authorization header. Two headers are refused
// rather than picking one, as for X-User-ID: a proxy that appends would let the client choose.
func BearerToken(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return ParseBearer("")
	case 1:
		return ParseBearer(values[0])
	default:
		return "", fmt.Errorf("%w: more than one Authorization header", ErrUnauthenticated)
	}
}

// isToken68 reports whether s is made of RFC 9110 token68 characters (a JWT uses a subset).
func isToken68(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '='
		if !ok {
			return false
		}
	}
	return true
}

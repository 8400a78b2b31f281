package likes

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/pkg/sessiontoken"
)

// testKeys sign the session tokens of the tests' likes, as a follower of a keyring that never
// rotates would; userOf verifies them.
var testKeys = sessiontoken.StaticKey{K: &sessiontoken.Key{ID: "1764633600", Secret: []byte("0123456789abcdef0123456789abcdef")}}

// userOf is the user a like names: the subject of its bearer token (verified with testKeys, with
// the session audience), or else its X-User-ID.
func userOf(r *http.Request) (string, error) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return r.Header.Get("X-User-ID"), nil
	}
	var c sessiontoken.Claims
	_, err := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(sessiontoken.Audience), jwt.WithExpirationRequired()).
		ParseWithClaims(raw, &c, func(tok *jwt.Token) (any, error) {
			if tok.Header["kid"] != testKeys.K.ID {
				return nil, errors.New("unknown kid")
			}
			return testKeys.K.Secret, nil
		})
	if err != nil {
		return "", err
	}
	return c.Subject, nil
}

// forEachIdentity runs test with users named in X-User-ID and with session tokens.
func forEachIdentity(t *testing.T, test func(t *testing.T, identity []Option)) {
	t.Run("header", func(t *testing.T) { test(t, nil) })
	t.Run("session", func(t *testing.T) { test(t, []Option{WithSessions(testKeys)}) })
}

package sessiontoken

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Audience is the `aud` of session tokens. It is how a writer routes a bearer token to its
// session verifier or to the site's: a site JWT never carries it, so the two kinds can never be
// taken for one another, and a site that sets AUTH_JWT_AUDIENCE does not accept session tokens as
// its own.
const Audience = "likes-session"

// Claims are a session token's claims: sub is the user, sid_start the unix second the session
// began, which a refresh carries over so that the session's maximum age bounds the whole chain of
// tokens.
type Claims struct {
	jwt.RegisteredClaims
	Start int64 `json:"sid_start"`
}

// NewClaims are the claims of a token for user in the session begun at start, issued at iat and
// expiring at exp (all unix seconds).
func NewClaims(user string, start, iat, exp int64) Claims {
	return Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   user,
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(time.Unix(iat, 0)),
			ExpiresAt: jwt.NewNumericDate(time.Unix(exp, 0)),
		},
		Start: start,
	}
}

// Sign returns c signed with the key kid: HS256, kid in the header.
func Sign(c Claims, kid string, secret []byte) (string, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	tok.Header["kid"] = kid
	signed, err := tok.SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("sign session token: %w", err)
	}
	return signed, nil
}

package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/pkg/ids"
)

// Token requires a bearer JWT and takes the user id from its `sub` claim. It accepts HS256 tokens
// signed with a shared secret and asymmetric tokens (RS*, PS*, ES*, EdDSA) whose key is in a JWKS,
// whichever of the two are configured. Unsigned tokens (alg "none") are never accepted: the
// parser only allows the listed methods, and only real keys are ever returned for them.
type Token struct {
	secret []byte
	keys   KeySet
	parser *jwt.Parser
}

var _ Identifier = (*Token)(nil)

// KeySet finds the public key a JWKS publishes under a key id for an algorithm.
type KeySet interface {
	Key(ctx context.Context, kid, alg string) (any, error)
}

// TokenOptions configures a Token. At least one of Secret and Keys must be set.
type TokenOptions struct {
	Secret   []byte // HS256 shared secret
	Keys     KeySet // JWKS keys for asymmetric algorithms
	Audience string // required `aud` when not empty
	Issuer   string // required `iss` when not empty
}

// Algorithms accepted from a JWKS; HMAC is accepted only with the configured secret.
var asymmetricAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// NewToken returns a Token verifier.
func NewToken(o TokenOptions) (*Token, error) {
	var methods []string
	if len(o.Secret) > 0 {
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	if o.Keys != nil {
		methods = append(methods, asymmetricAlgs...)
	}
	if len(methods) == 0 {
		return nil, errors.New("token auth needs a secret or a key set")
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(methods), jwt.WithExpirationRequired()}
	if o.Audience != "" {
		opts = append(opts, jwt.WithAudience(o.Audience))
	}
	if o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(o.Issuer))
	}
	return &Token{secret: o.Secret, keys: o.Keys, parser: jwt.NewParser(opts...)}, nil
}

// UserID verifies the request's bearer token and returns its subject.
func (t *Token) UserID(r *http.Request) (string, error) {
	raw, err := BearerToken(r)
	if err != nil {
		return "", err
	}
	return t.Verify(r.Context(), raw)
}

// Verify checks raw's signature, expiry (required) and, when configured, audience and issuer,
// and returns its `sub`, which must be a valid user id outside the benchmark namespace
// (ErrReservedUser).
func (t *Token) Verify(ctx context.Context, raw string) (string, error) {
	c, err := t.claims(ctx, raw)
	if err != nil {
		return "", err
	}
	return c.Subject, nil
}

// siteClaims are the claims read from a site's JWT: the registered ones, and the roles that
// grant the admin API (Admin): `role`, usually one name, and `roles`, usually a list of names.
type siteClaims struct {
	jwt.RegisteredClaims
	Role  roleNames `json:"role,omitempty"`
	Roles roleNames `json:"roles,omitempty"`
}

// hasRole reports whether the claims name role.
func (c *siteClaims) hasRole(role string) bool {
	return role != "" && (slices.Contains(c.Role, role) || slices.Contains(c.Roles, role))
}

// roleNames is a role claim, read as one name or a list of names: identity providers differ
// (some send `role` as a list once a user has several, or `roles` as a string when there is one).
// A claim of any other shape names no role instead of failing the token: every like verifies
// these claims, and a like must not depend on a claim only the admin API reads.
type roleNames []string

// UnmarshalJSON reads a string as one name, a list of strings as names, and anything else as none.
func (r *roleNames) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*r = roleNames{one}
		return nil
	}
	var many []string
	if json.Unmarshal(b, &many) == nil {
		*r = many
		return nil
	}
	*r = nil
	return nil
}

// claims verifies raw as Verify does and returns its claims.
func (t *Token) claims(ctx context.Context, raw string) (*siteClaims, error) {
	var claims siteClaims
	_, err := t.parser.ParseWithClaims(raw, &claims, func(tok *jwt.Token) (any, error) {
		return t.key(ctx, tok)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if err := ids.ValidUserID(claims.Subject); err != nil {
		return nil, fmt.Errorf("%w: token subject: %w", ErrUnauthenticated, err)
	}
	if err := notReserved(claims.Subject); err != nil {
		return nil, err
	}
	return &claims, nil
}

// key returns the verification key for tok's algorithm. The parser has already refused any
// algorithm outside the configured list, so "none" never reaches here.
func (t *Token) key(ctx context.Context, tok *jwt.Token) (any, error) {
	alg := tok.Method.Alg()
	if alg == jwt.SigningMethodHS256.Alg() {
		if len(t.secret) == 0 {
			return nil, errors.New("HS256 tokens are not accepted")
		}
		return t.secret, nil
	}
	if t.keys == nil {
		return nil, fmt.Errorf("%s tokens are not accepted", alg)
	}
	kid, _ := tok.Header["kid"].(string)
	if kid == "" {
		return nil, errors.New("token has no kid")
	}
	return t.keys.Key(ctx, kid, alg)
}

package auth

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/pkg/sessiontoken"
)

// SessionAudience is the `aud` of the writer's own session tokens (package session). It is how a
// bearer token is routed to the session verifier or the site's: a site JWT never carries it, so
// the two kinds can never be taken for one another, and a site that sets AUTH_JWT_AUDIENCE does
// not accept session tokens as its own.
const SessionAudience = sessiontoken.Audience

// ErrSessionRequired is the answer, a 401, of the sessions-only mode to a request without a
// session token: it names the way to get one, since X-User-ID is not believed in that mode.
var ErrSessionRequired = fmt.Errorf("%w: a session token is required: POST /session", ErrUnauthenticated)

// Verifier checks a raw bearer token and returns the user it names; a bad token is
// ErrUnauthenticated, any other error means the verifier could not decide (a 503).
type Verifier interface {
	Verify(ctx context.Context, raw string) (string, error)
}

// Chain identifies a request in one of three modes, chosen at start:
//
//   - Site set (the site's JWTs): a bearer token is required; one with the session audience goes
//     to Sessions, any other to Site. X-User-ID is ignored and TrustHeader must be false (the
//     writer refuses to start with both, as a gateway mode and a token mode at once is
//     ambiguous).
//   - TrustHeader (behind a gateway that sets X-User-ID): only a bearer token with the session
//     audience is verified, and a bad one is a 401; any other request is identified by X-User-ID,
//     so a gateway that sets X-User-ID and passes its own Authorization header through keeps
//     working. A token can therefore never make a request act for a user X-User-ID could not
//     already name in that mode.
//   - neither (the default, sessions only): a session token is required, and X-User-ID is never
//     believed, since anyone who reaches the writer could send it. Anything else is
//     ErrSessionRequired.
//
// The zero Chain is the last mode with no sessions: it identifies nobody, so a forgotten field
// fails closed rather than trusting a header.
type Chain struct {
	Sessions    Verifier // the writer's session tokens; nil: not accepted
	Site        Verifier // the site's own JWTs (Token); nil: sessions, and X-User-ID if trusted
	TrustHeader bool     // believe X-User-ID (without Site): only behind a gateway that sets it
}

var _ Identifier = Chain{}

// UserID returns the user the request acts for.
func (c Chain) UserID(r *http.Request) (string, error) {
	switch {
	case c.Site != nil:
		return c.site(r)
	case c.TrustHeader:
		if raw, ok := sessionBearer(r); ok && c.Sessions != nil {
			return c.Sessions.Verify(r.Context(), raw)
		}
		return Header{}.UserID(r)
	default:
		raw, ok := sessionBearer(r)
		if !ok || c.Sessions == nil {
			return "", ErrSessionRequired
		}
		return c.Sessions.Verify(r.Context(), raw)
	}
}

// site identifies r in the site-JWT mode: a bearer token is required, routed by its audience.
func (c Chain) site(r *http.Request) (string, error) {
	raw, err := BearerToken(r)
	if err != nil {
		return "", err
	}
	if !IsSessionToken(raw) {
		return c.Site.Verify(r.Context(), raw)
	}
	if c.Sessions == nil {
		return "", fmt.Errorf("%w: session tokens are not accepted", ErrUnauthenticated)
	}
	return c.Sessions.Verify(r.Context(), raw)
}

// sessionBearer returns the request's bearer token when it claims to be a session token.
func sessionBearer(r *http.Request) (string, bool) {
	raw, err := BearerToken(r)
	if err != nil || !IsSessionToken(raw) {
		return "", false
	}
	return raw, true
}

// IsSessionToken reports whether raw, unverified, claims the session audience. It only routes
// the token: the verifier it is routed to checks the signature and every claim.
func IsSessionToken(raw string) bool {
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &c); err != nil {
		return false
	}
	return slices.Contains(c.Audience, SessionAudience)
}

// Package session issues and verifies the writer's own session tokens: an anonymous visitor gets
// a random user id and a short-lived HS256 JWT for it (POST /session), which it renews before or
// shortly after expiry (POST /session/refresh) for as long as the session is younger than its
// maximum age. The token, not a header anyone can set, then says who likes.
//
// The signing keys live in Redis (sessiontoken.Keyring, shared with loadgen, which signs tokens
// for its own users) so that every writer replica signs and verifies with the same ones without an
// operator configuring a secret: the first writer that needs the key of a rotation period creates
// it (SET NX, so exactly one wins) and the others read it. A key expires from Redis once no token
// it signed can be valid or refreshed any more. A static AUTH_SESSION_SECRET replaces all of that
// with one key.
package session

// Package session issues and verifies the writer's own session tokens: an anonymous visitor gets
// a random user id and a short-lived HS256 JWT for it (POST /session), which it renews before or
// shortly after expiry (POST /session/refresh) for as long as the session is younger than its
// maximum age. The token, not a header anyone can set, then says who likes.
//
// The signing keys come, in this order, from a key file (SESSION_KEY_FILE, sessiontoken.FileKeys:
// a line per key, the last signs, all verify, read again every few seconds so that a rotation
// needs no restart), from a static AUTH_SESSION_SECRET, or from Redis (sessiontoken.Keyring,
// shared with loadgen): there the first writer that needs the key of a rotation period creates it
// (SET NX, so exactly one wins), the others read it, and it expires once no token it signed can be
// valid or refreshed any more. Keys in Redis need no operator, but whoever can read them with the
// writers' Redis rights can sign a session for anyone, so every shipped deployment uses a file.
package session

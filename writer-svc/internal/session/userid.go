package session

import (
	"crypto/rand"
	"encoding/base64"
)

// userIDPrefix marks the user ids of anonymous sessions, so that an operator can tell them from
// the ids a site's own tokens or gateway carry. Being fixed, it also keeps every session's id out
// of the benchmark namespace (sessiontoken.BenchUserPrefix), whose users whoever holds a
// benchmark key can act for.
const userIDPrefix = "anon-"

// newUserID returns a fresh anonymous user id: 128 random bits, base64url, which is URL-safe and
// a valid user id (no spaces, no colons). Nobody can guess another visitor's id, and two
// sessions never share one.
func newUserID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return userIDPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

package redisacl

import (
	"crypto/rand"
	"encoding/hex"
)

// MinPasswordLen is the shortest password the files accept: 32 characters. Redis checks a
// password at memory speed, so only its length stands between a reachable port and a guess.
const MinPasswordLen = 32

// NewPasswords returns a fresh password for every user: 32 random bytes, hex-encoded.
func NewPasswords() Passwords {
	pw := make(Passwords, len(Users))
	for _, u := range Users {
		pw[u] = NewSecret()
	}
	return pw
}

// NewSecret returns 32 random bytes, hex-encoded (64 characters).
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+): it crashes the program instead
	return hex.EncodeToString(b)
}

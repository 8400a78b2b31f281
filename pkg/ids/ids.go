// Package ids validates the identifiers that arrive from untrusted clients, so that the writer and
// every fanout node accept and refuse exactly the same post and user ids.
package ids

import "errors"

// Limits on identifier lengths.
const (
	MaxPostIDLen = 64
	MaxUserIDLen = 128
)

// Errors returned by the validators; their text is safe to show to a client.
var (
	ErrPostID = errors.New("post id must be 1-64 characters of A-Z a-z 0-9 _ -")
	ErrUserID = errors.New("user id must be 1-128 printable characters without spaces or colons")
)

// ValidPostID reports whether id is 1-64 characters of [A-Za-z0-9_-]. The character set keeps
// post ids safe inside Redis hash tags ({}), SSE ids and JSON without escaping.
func ValidPostID(id string) error {
	if len(id) == 0 || len(id) > MaxPostIDLen {
		return ErrPostID
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isIDByte(c) {
			return ErrPostID
		}
	}
	return nil
}

// isIDByte reports whether c may appear in a post id: A-Z a-z 0-9 _ -.
func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ValidUserID reports whether id is 1-128 printable ASCII characters without spaces or colons.
// Colons are refused because the user id ends a Redis key; non-ASCII is refused so that a user id
// has exactly one byte representation.
func ValidUserID(id string) error {
	if len(id) == 0 || len(id) > MaxUserIDLen {
		return ErrUserID
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c >= 0x7f || c == ':' {
			return ErrUserID
		}
	}
	return nil
}

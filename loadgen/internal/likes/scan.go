package likes

import (
	"bytes"
	"errors"
)

// The keys scanLike looks for, quotes included, so that a key is not found inside a longer one.
var (
	keyCount = []byte(`"count"`)
	keyLiked = []byte(`"liked"`)
)

var (
	errNoCount = errors.New(`no "count" number`)
	errNoLiked = errors.New(`no "liked" boolean`)
)

// scanLike reads "count" and "liked" from a like's answer, {"post_id":"42","count":123,"liked":true}.
// It is a byte scan, not a JSON parser: the writer's answer is one flat object whose post id
// needs no escaping, and a like must cost the generator far less than it costs the writer.
func scanLike(body []byte) (count int64, liked bool, err error) {
	v := field(body, keyCount)
	count, ok := leadingInt(v)
	if !ok {
		return 0, false, errNoCount
	}
	switch v := field(body, keyLiked); {
	case bytes.HasPrefix(v, []byte("true")):
		liked = true
	case bytes.HasPrefix(v, []byte("false")):
	default:
		return 0, false, errNoLiked
	}
	return count, liked, nil
}

// field returns what follows the first occurrence of key that is followed by a colon (so a string
// value equal to the key is skipped), with the colon and the spaces around it removed; nil when
// there is none.
func field(body, key []byte) []byte {
	for {
		i := bytes.Index(body, key)
		if i < 0 {
			return nil
		}
		body = skipSpace(body[i+len(key):])
		if len(body) > 0 && body[0] == ':' {
			return skipSpace(body[1:])
		}
	}
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// leadingInt parses the integer at the start of b: an optional minus sign and 1 to 18 digits,
// followed by anything but another digit.
func leadingInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	digits := 0
	for ; digits < len(b) && b[digits] >= '0' && b[digits] <= '9'; digits++ {
		if digits == 18 {
			return 0, false
		}
		n = n*10 + int64(b[digits]-'0')
	}
	if digits == 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

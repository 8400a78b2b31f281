package sessiontoken

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// A session key file (the writer's SESSION_KEY_FILE) holds the signing keys an operator keeps out
// of Redis, one a line:
//
//	# comments and blank lines are ignored
//	20261207T190000Z  bXktZmlyc3Qta2V5LW9mLWF0LWxlYXN0LTMyLWJ5dGVzLi4u
//	20270301T090000Z  c2Vjb25kLWtleS1vZi1hdC1sZWFzdC0zMi1ieXRlcy4uLi4u
//
// Each line is a key id and the key, base64url (padding optional) of at least MinSecretLen bytes.
// Every key verifies the tokens it signed; the LAST one signs. Rotation is therefore an append (the
// new key signs), then, once no token of the old one can be used any more (SESSION_TTL +
// SESSION_REFRESH_GRACE after the new one took over), a removal. Removing a key ends every session
// it signed.
const (
	// MaxKeyFileKeys bounds the keys of a file: rotation keeps two or three.
	MaxKeyFileKeys = 64
	// maxKeyFileSize bounds what is read of the file: 64 keys are about 4 KiB.
	maxKeyFileSize = 64 << 10
	maxKIDLen      = 64
)

// ReadKeyFile reads and parses the session key file at path.
func ReadKeyFile(path string) ([]Key, error) {
	_, keys, err := readKeyFile(path)
	return keys, err
}

// readKeyFile returns the content of the key file at path and its keys.
func readKeyFile(path string) ([]byte, []Key, error) {
	b, err := readBounded(path)
	if err != nil {
		return nil, nil, fmt.Errorf("session key file: %w", err)
	}
	keys, err := ParseKeyFile(b)
	if err != nil {
		return b, nil, fmt.Errorf("session key file %s: %w", path, err)
	}
	return b, keys, nil
}

// readBounded reads at most maxKeyFileSize bytes of path; a longer file is an error rather than a
// truncated key list.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFileSize {
		return nil, fmt.Errorf("%s is over %d bytes: not a session key file", path, maxKeyFileSize)
	}
	return b, nil
}

// ParseKeyFile parses the content of a session key file: its keys in file order, the signing one
// last. Errors name the line and never quote a key.
func ParseKeyFile(b []byte) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := parseKeyLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("line %d: key id %q appears twice", i+1, k.ID)
		}
		seen[k.ID] = true
		keys = append(keys, k)
	}
	switch {
	case len(keys) == 0:
		return nil, errors.New("no key: want lines of `kid base64url-key` (the last one signs)")
	case len(keys) > MaxKeyFileKeys:
		return nil, fmt.Errorf("%d keys; at most %d", len(keys), MaxKeyFileKeys)
	}
	return keys, nil
}

func parseKeyLine(line string) (Key, error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return Key{}, fmt.Errorf("%d fields; want `kid base64url-key`", len(f))
	}
	kid, enc := f[0], strings.TrimRight(f[1], "=")
	if err := validKID(kid); err != nil {
		return Key{}, err
	}
	secret, err := b64.DecodeString(enc)
	if err != nil {
		return Key{}, fmt.Errorf("key %q is not base64url (A-Z a-z 0-9 - _: `openssl rand -base64 32 | tr '+/' '-_'` makes one)", kid)
	}
	if len(secret) < MinSecretLen {
		return Key{}, fmt.Errorf("key %q has %d bytes; at least %d are needed (make one with `credentials session-key`)", kid, len(secret), MinSecretLen)
	}
	return Key{ID: kid, Secret: secret}, nil
}

// validKID accepts the key ids a token header carries as they are (Minter writes them without
// escaping): letters, digits, '-', '_' and '.', and never the benchmark key's id, which a writer
// settles before asking its keys.
func validKID(kid string) error {
	if kid == BenchKeyID {
		return fmt.Errorf("key id %q is the benchmark key's; choose another", kid)
	}
	if len(kid) > maxKIDLen {
		return fmt.Errorf("key id of %d characters; at most %d", len(kid), maxKIDLen)
	}
	for _, c := range []byte(kid) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("key id %q: only letters, digits, '-', '_' and '.'", kid)
		}
	}
	return nil
}

// NewKeyLine returns a line of a session key file: kid and a fresh random key of MinSecretLen
// bytes. kid must be valid (letters, digits, '-', '_', '.').
func NewKeyLine(kid string) (string, error) {
	if err := validKID(kid); err != nil {
		return "", err
	}
	secret := make([]byte, MinSecretLen)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	return kid + " " + b64.EncodeToString(secret), nil
}

// sameKey reports whether a and b are the same key: id and secret.
func sameKey(a, b *Key) bool {
	return a != nil && b != nil && a.ID == b.ID && bytes.Equal(a.Secret, b.Secret)
}

package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/likes/likes/pkg/sessiontoken"
)

// Options configure sessions; DefaultOptions are the documented defaults.
type Options struct {
	TTL          time.Duration // a token's lifetime
	RefreshGrace time.Duration // how long after expiry a token may still be refreshed
	MaxAge       time.Duration // no token is issued for a session older than this
	KeyRotate    time.Duration // how long one key signs before the next takes over
	// KeyFile, when set, is the file of the signing keys (sessiontoken.ParseKeyFile: `kid key`
	// lines, the last signs, all verify), read again every KeyFilePoll: no keys in Redis, and
	// Secret is not used.
	KeyFile string
	// KeyFilePoll and KeyFileHandover are sessiontoken.FileKeysOptions' Poll and Handover
	// (default 5s and 2m).
	KeyFilePoll, KeyFileHandover time.Duration
	// Secret, when set (and KeyFile not), is the one static HS256 key (kid "static"): no keys in
	// Redis, no rotation.
	Secret []byte
	// BenchSecret, when set, also verifies benchmark tokens (kid sessiontoken.BenchKeyID) for
	// users in the benchmark namespace (sessiontoken.BenchUserPrefix): a load generator's.
	BenchSecret []byte
	// KeyRefresh is how often a writer reloads the key set from Redis (default 1m), which is
	// also how soon keys an operator deleted (to end every session) stop verifying.
	KeyRefresh time.Duration
	// UnknownKIDEvery bounds the Redis lookups that tokens with a kid not in memory cause
	// (default 1s), so forged kids cannot turn into a Redis load.
	UnknownKIDEvery time.Duration
	Now             func() time.Time // clock; time.Now when nil
}

// DefaultOptions returns the defaults: one-hour tokens, refreshable for a day after they expire,
// sessions of up to 90 days, weekly key rotation.
func DefaultOptions() Options {
	return Options{TTL: sessiontoken.DefaultTTL, RefreshGrace: sessiontoken.DefaultRefreshGrace, MaxAge: 90 * 24 * time.Hour,
		KeyRotate: sessiontoken.DefaultKeyRotate}
}

// Validate explains the first unusable setting.
func (o Options) Validate() error {
	switch {
	case o.TTL < time.Second:
		return errors.New("session ttl must be at least 1s")
	case o.RefreshGrace < 0:
		return errors.New("session refresh grace must not be negative")
	case o.MaxAge < o.TTL:
		return fmt.Errorf("session max age %s must be at least the ttl %s", o.MaxAge, o.TTL)
	case o.BenchSecret != nil && len(o.BenchSecret) < sessiontoken.MinBenchKeyLen:
		return fmt.Errorf("benchmark session key must be at least %d bytes", sessiontoken.MinBenchKeyLen)
	}
	if o.KeyFile != "" {
		return nil // the keys are the file's, checked as it is read: rotation does not apply
	}
	return o.keyring().Validate()
}

// KeySource names where the signing keys come from, for the start log: "file", "static" or
// "redis".
func (o Options) KeySource() string {
	switch {
	case o.KeyFile != "":
		return "file"
	case o.Secret != nil:
		return "static"
	default:
		return "redis"
	}
}

// keyring is what the keys need to know: a key must verify for as long as a token it signed can
// be used, until it expires and then refreshed within the grace.
func (o Options) keyring() sessiontoken.KeyringOptions {
	return sessiontoken.KeyringOptions{
		Rotate: o.KeyRotate, Life: o.TTL + o.RefreshGrace, Secret: o.Secret,
		Reload: o.KeyRefresh, UnknownKIDEvery: o.UnknownKIDEvery, Now: o.Now,
	}
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

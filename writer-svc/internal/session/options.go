package session

import (
	"errors"
	"fmt"
	"time"
)

// Options configure sessions; DefaultOptions are the documented defaults.
type Options struct {
	TTL          time.Duration // a token's lifetime
	RefreshGrace time.Duration // how long after expiry a token may still be refreshed
	MaxAge       time.Duration // no token is issued for a session older than this
	KeyRotate    time.Duration // how long one key signs before the next takes over
	// Secret, when set, is the one static HS256 key (kid "static"): no keys in Redis, no rotation.
	Secret []byte
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
	return Options{TTL: time.Hour, RefreshGrace: 24 * time.Hour, MaxAge: 90 * 24 * time.Hour, KeyRotate: 7 * 24 * time.Hour}
}

// MinSecretLen is the HS256 key size RFC 7518 §3.2 requires, and the size of generated keys.
const MinSecretLen = 32

// maxLiveKeys bounds the keys that can be live at once ((rotate + TTL + grace) / rotate, plus
// slack), which is how many a key reload reads: a rotation far shorter than a token's life would
// make every reload read hundreds.
const maxLiveKeys = 64

// clockSkew is how far apart the writers' clocks may be: a key whose period began up to this far
// in the future is a writer whose clock runs ahead, and keys live this much longer in Redis.
const clockSkew = 5 * time.Minute

// Validate explains the first unusable setting.
func (o Options) Validate() error {
	switch {
	case o.TTL < time.Second:
		return errors.New("session ttl must be at least 1s")
	case o.RefreshGrace < 0:
		return errors.New("session refresh grace must not be negative")
	case o.MaxAge < o.TTL:
		return fmt.Errorf("session max age %s must be at least the ttl %s", o.MaxAge, o.TTL)
	case o.Secret != nil && len(o.Secret) < MinSecretLen:
		return fmt.Errorf("session secret must be at least %d bytes", MinSecretLen)
	case o.Secret != nil:
		return nil // no keys in Redis: rotation does not apply
	case o.KeyRotate < time.Second || o.KeyRotate%time.Second != 0:
		return errors.New("session key rotation must be whole seconds, at least 1s")
	case (o.life()+clockSkew)/o.KeyRotate > maxLiveKeys-2:
		return fmt.Errorf("session key rotation %s is too short for tokens that live %s (ttl + refresh grace): at most %d keys may be live",
			o.KeyRotate, o.life(), maxLiveKeys)
	}
	return nil
}

// life is how long a token may be used after it is signed: until it expires, then refreshed
// within the grace. A key must verify for this long after it last signed.
func (o Options) life() time.Duration { return o.TTL + o.RefreshGrace }

func (o Options) withDefaults() Options {
	if o.KeyRefresh <= 0 {
		o.KeyRefresh = time.Minute
	}
	if o.UnknownKIDEvery <= 0 {
		o.UnknownKIDEvery = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

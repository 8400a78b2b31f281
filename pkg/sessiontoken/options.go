package sessiontoken

import (
	"errors"
	"fmt"
	"time"
)

// The defaults of the writer's SESSION_TTL, SESSION_REFRESH_GRACE and SESSION_KEY_ROTATE. They are
// here rather than in the writer so that another signer (loadgen) computes the same key ids and
// creates keys that live as long as a writer's would.
const (
	DefaultTTL          = time.Hour
	DefaultRefreshGrace = 24 * time.Hour
	DefaultKeyRotate    = 7 * 24 * time.Hour
)

// DefaultReload is how often a keyring rereads its keys from Redis unless told otherwise: the
// writers' interval, and so how long after a key appears in Redis every writer has it in memory.
const DefaultReload = time.Minute

// MinSecretLen is the HS256 key size RFC 7518 §3.2 requires, and the size of generated keys.
const MinSecretLen = 32

// maxLiveKeys bounds the keys that can be live at once ((rotate + life) / rotate, plus slack),
// which is how many a key reload reads: a rotation far shorter than a token's life would make
// every reload read hundreds.
const maxLiveKeys = 64

// clockSkew is how far apart the signers' clocks may be: a key whose period began up to this far
// in the future is a signer whose clock runs ahead, and keys live this much longer in Redis.
const clockSkew = 5 * time.Minute

// KeyringOptions configure a Keyring. Every signer on one Redis must agree on Rotate (it names
// the keys) and should on Life (it sets how long a key it creates lives).
type KeyringOptions struct {
	Rotate time.Duration // how long one key signs before the next takes over
	// Life is how long a token may be used after it is signed: its TTL, then the grace in which
	// it may still be refreshed. A key must verify for this long after it last signed.
	Life time.Duration
	// Secret, when set, is the one static HS256 key (kid StaticKID): no keys in Redis, no rotation.
	Secret []byte
	// Reload is how often the keyring rereads its keys from Redis (default DefaultReload), which
	// is also how soon keys an operator deleted (to end every session) stop verifying.
	Reload time.Duration
	// UnknownKIDEvery bounds the Redis lookups that tokens with a kid not in memory cause
	// (default 1s), so forged kids cannot turn into a Redis load.
	UnknownKIDEvery time.Duration
	Now             func() time.Time // clock; time.Now when nil
}

// Validate explains the first unusable setting.
func (o KeyringOptions) Validate() error {
	switch {
	case o.Secret != nil && len(o.Secret) < MinSecretLen:
		return fmt.Errorf("session secret must be at least %d bytes", MinSecretLen)
	case o.Secret != nil:
		return nil // no keys in Redis: rotation does not apply
	case o.Life < 0:
		return errors.New("session token life must not be negative")
	case o.Rotate < time.Second || o.Rotate%time.Second != 0:
		return errors.New("session key rotation must be whole seconds, at least 1s")
	case (o.Life+clockSkew)/o.Rotate > maxLiveKeys-2:
		return fmt.Errorf("session key rotation %s is too short for tokens that live %s (ttl + refresh grace): at most %d keys may be live",
			o.Rotate, o.Life, maxLiveKeys)
	}
	return nil
}

func (o KeyringOptions) withDefaults() KeyringOptions {
	if o.Reload <= 0 {
		o.Reload = DefaultReload
	}
	if o.UnknownKIDEvery <= 0 {
		o.UnknownKIDEvery = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

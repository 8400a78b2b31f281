package sessiontoken

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/likes/likes/pkg/rediskeys"
)

// StaticKID is the key id of tokens signed with AUTH_SESSION_SECRET.
const StaticKID = "static"

// ErrUnavailable is a key that could not be read from or written to Redis: the caller answers
// 503, not 401, since the token may well be good.
var ErrUnavailable = errors.New("session keys unavailable")

// errUnknownKey is a kid that names no live key: forged, or its key has expired.
var errUnknownKey = errors.New("unknown or expired session key")

// key is one signing key as a keyring holds it.
type key struct {
	secret []byte
	until  time.Time // when it stops verifying: its expiry in Redis, as read
}

// Keyring holds the signing keys shared through Redis. A key's id is the unix second its
// rotation period began (periods are multiples of Rotate since the epoch), so every signer agrees
// on which key is current without asking: the one whose period has begun. The first signer to
// need it creates it with SET NX; one that loses the race reads the winner's. Keys live in Redis
// until their last token can no longer be used (period end + Life + clock skew), then expire; a
// periodic reload drops them from memory too, and picks up keys an operator deleted to end every
// session.
type Keyring struct {
	rdb     redis.UniversalClient
	keys    rediskeys.Scheme
	o       KeyringOptions
	log     *zap.Logger
	static  *key
	unknown *rate.Limiter // Redis lookups of kids not in memory
	create  chan struct{} // one creation (or first read) of the current key at a time

	mu    sync.RWMutex
	cache map[string]key

	stop chan struct{}
	done chan struct{}
}

// NewKeyring returns the keyring o describes (o must be valid). Unless o.Secret is set, it
// reloads the keys from Redis every o.Reload in a goroutine that Close stops.
func NewKeyring(rdb redis.UniversalClient, keys rediskeys.Scheme, o KeyringOptions, log *zap.Logger) *Keyring {
	o = o.withDefaults()
	k := &Keyring{
		rdb: rdb, keys: keys, o: o, log: log,
		unknown: rate.NewLimiter(rate.Every(o.UnknownKIDEvery), 1),
		create:  make(chan struct{}, 1),
		cache:   make(map[string]key),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if o.Secret != nil {
		k.static = &key{secret: o.Secret}
		close(k.done)
		return k
	}
	go k.reloadLoop()
	return k
}

// Close stops the reload loop and waits for it.
func (k *Keyring) Close() {
	if k.static == nil {
		close(k.stop)
	}
	<-k.done
}

func (k *Keyring) reloadLoop() {
	defer close(k.done)
	t := time.NewTicker(k.o.Reload)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := k.Reload(ctx)
		cancel()
		if err != nil {
			k.log.Warn("session key reload failed; keeping the keys in memory", zap.Error(err))
		}
	}
}

// Signing returns the current key and its id, creating it in Redis if no signer has yet.
func (k *Keyring) Signing(ctx context.Context) (string, []byte, error) {
	if k.static != nil {
		return StaticKID, k.static.secret, nil
	}
	now := k.o.Now()
	kid := k.kidAt(now)
	if s, ok := k.cached(kid, now); ok {
		return kid, s, nil
	}
	select {
	case k.create <- struct{}{}:
		defer func() { <-k.create }()
	case <-ctx.Done():
		return "", nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	}
	if s, ok := k.cached(kid, now); ok { // another request created or read it meanwhile
		return kid, s, nil
	}
	got, err := k.ensure(ctx, kid, now)
	if err != nil {
		return "", nil, err
	}
	k.put(kid, got)
	return kid, got.secret, nil
}

// ensure reads the key kid from Redis, or creates it there when no signer has.
func (k *Keyring) ensure(ctx context.Context, kid string, now time.Time) (key, error) {
	if got, ok, err := k.read(ctx, kid, now); err != nil || ok {
		return got, err
	}
	secret := make([]byte, MinSecretLen)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	start, _ := strconv.ParseInt(kid, 10, 64)
	ttl := time.Unix(start, 0).Add(k.o.Rotate + k.o.Life + clockSkew).Sub(now)
	name := k.keys.SessionKey(kid)
	created, err := k.rdb.SetNX(ctx, name, base64.RawURLEncoding.EncodeToString(secret), ttl).Result()
	if err != nil {
		return key{}, fmt.Errorf("%w: create %s: %w", ErrUnavailable, name, err)
	}
	if created {
		k.log.Info("created session signing key", zap.String("kid", kid), zap.Duration("ttl", ttl))
		return key{secret: secret, until: now.Add(ttl)}, nil
	}
	got, ok, err := k.read(ctx, kid, now) // another signer won the race
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s vanished after SET NX refused", ErrUnavailable, name)
	}
	return got, err
}

// Verifying returns the secret of key kid: from memory, or, for a kid that could be live but is
// not in memory (a signer with a faster clock began a period), from Redis at most once per
// UnknownKIDEvery.
func (k *Keyring) Verifying(ctx context.Context, kid string) ([]byte, error) {
	if k.static != nil {
		if kid != StaticKID {
			return nil, errUnknownKey
		}
		return k.static.secret, nil
	}
	now := k.o.Now()
	if s, ok := k.cached(kid, now); ok {
		return s, nil
	}
	if !k.plausible(kid, now) || !k.unknown.Allow() {
		return nil, errUnknownKey
	}
	got, ok, err := k.read(ctx, kid, now)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errUnknownKey
	}
	k.put(kid, got)
	return got.secret, nil
}

// Reload rereads every key that may be live, and those in memory, from Redis: keys found replace
// the ones in memory, keys gone (expired, deleted) are dropped. One pipeline, one round trip per
// node.
func (k *Keyring) Reload(ctx context.Context) error {
	if k.static != nil {
		return nil
	}
	now := k.o.Now()
	kids := k.candidates(now)
	k.mu.RLock()
	for kid := range k.cache {
		kids[kid] = struct{}{}
	}
	k.mu.RUnlock()
	type reply struct {
		get  *redis.StringCmd
		pttl *redis.DurationCmd
	}
	replies := make(map[string]reply, len(kids))
	_, err := k.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for kid := range kids {
			name := k.keys.SessionKey(kid)
			replies[kid] = reply{get: p.Get(ctx, name), pttl: p.PTTL(ctx, name)}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: reload: %w", ErrUnavailable, err)
	}
	fresh := make(map[string]key, len(replies))
	for kid, r := range replies {
		got, ok, err := k.decode(kid, r.get, r.pttl, now)
		if err != nil {
			return err
		}
		if ok {
			fresh[kid] = got
		}
	}
	k.mu.Lock()
	k.cache = fresh
	k.mu.Unlock()
	return nil
}

// read fetches one key and how long it has left.
func (k *Keyring) read(ctx context.Context, kid string, now time.Time) (key, bool, error) {
	name := k.keys.SessionKey(kid)
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := k.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get, pttl = p.Get(ctx, name), p.PTTL(ctx, name)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return key{}, false, fmt.Errorf("%w: read %s: %w", ErrUnavailable, name, err)
	}
	return k.decode(kid, get, pttl, now)
}

// decode turns the replies of GET and PTTL of key kid into a key; false when it does not exist.
// A value that is not a base64url key of the right size is refused, not used: whatever wrote it,
// signing with it could be signing with a key someone chose.
func (k *Keyring) decode(kid string, get *redis.StringCmd, pttl *redis.DurationCmd, now time.Time) (key, bool, error) {
	v, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return key{}, false, nil
	}
	if err != nil {
		return key{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ttl, err := pttl.Result()
	if err != nil {
		return key{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	secret, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(secret) != MinSecretLen {
		return key{}, false, fmt.Errorf("%w: %s does not hold a %d-byte base64url key", ErrUnavailable, k.keys.SessionKey(kid), MinSecretLen)
	}
	if ttl <= 0 { // no expiry (an operator's SET) or gone since GET: live until its period says
		ttl = k.end(kid).Sub(now)
	}
	return key{secret: secret, until: now.Add(ttl)}, true, nil
}

// kidAt is the id of the key whose period contains t.
func (k *Keyring) kidAt(t time.Time) string {
	period := int64(k.o.Rotate / time.Second)
	s := t.Unix()
	return strconv.FormatInt(s-mod(s, period), 10)
}

func mod(a, b int64) int64 { return ((a % b) + b) % b }

// end is when key kid stops verifying whatever Redis says: its period's end, plus the life of
// the last token it signed, plus clock skew.
func (k *Keyring) end(kid string) time.Time {
	start, _ := strconv.ParseInt(kid, 10, 64)
	return time.Unix(start, 0).Add(k.o.Rotate + k.o.Life + clockSkew)
}

// plausible reports whether kid is a key id that could be live at now: a canonical unix second
// whose period began no later than the clock skew allows and whose tokens can still be used.
func (k *Keyring) plausible(kid string, now time.Time) bool {
	start, err := strconv.ParseInt(kid, 10, 64)
	if err != nil || start < 0 || strconv.FormatInt(start, 10) != kid {
		return false
	}
	return !time.Unix(start, 0).After(now.Add(clockSkew)) && now.Before(k.end(kid))
}

// candidates are the ids of every period whose key may be live at now.
func (k *Keyring) candidates(now time.Time) map[string]struct{} {
	out := make(map[string]struct{}, maxLiveKeys)
	for t := now.Add(-(k.o.Rotate + k.o.Life + clockSkew)); !t.After(now); t = t.Add(k.o.Rotate) {
		out[k.kidAt(t)] = struct{}{}
	}
	out[k.kidAt(now)] = struct{}{}
	return out
}

func (k *Keyring) cached(kid string, now time.Time) ([]byte, bool) {
	k.mu.RLock()
	got, ok := k.cache[kid]
	k.mu.RUnlock()
	if !ok || !now.Before(got.until) || !now.Before(k.end(kid)) {
		return nil, false
	}
	return got.secret, true
}

func (k *Keyring) put(kid string, got key) {
	k.mu.Lock()
	k.cache[kid] = got
	k.mu.Unlock()
}

package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/writer-svc/internal/auth"
)

// ErrTooOld is a refresh of a session older than its maximum age: the client starts a new one.
var ErrTooOld = fmt.Errorf("%w: session is older than its maximum age; start a new one with POST /session", auth.ErrUnauthenticated)

// Session is an issued token and what it says.
type Session struct {
	Token     string `json:"token"`
	UserID    string `json:"user_id"`
	ExpiresAt int64  `json:"expires_at"` // unix seconds
}

// keySource is where an Issuer's keys come from: a key file (sessiontoken.FileKeys), or the
// static secret or the keys in Redis (sessiontoken.Keyring).
type keySource interface {
	// Signing returns the key to sign with now and its id.
	Signing(ctx context.Context) (string, []byte, error)
	// Verifying returns the secret of key kid.
	Verifying(ctx context.Context, kid string) ([]byte, error)
	// Close stops what keeps the keys current.
	Close()
}

var (
	_ keySource = (*sessiontoken.Keyring)(nil)
	_ keySource = (*sessiontoken.FileKeys)(nil)
)

// Issuer signs and verifies session tokens with the keys of its key source.
type Issuer struct {
	ring    keySource
	o       Options
	verify  *jwt.Parser // a like: the token must be current
	refresh *jwt.Parser // a refresh: up to RefreshGrace past expiry
}

var _ auth.Verifier = (*Issuer)(nil)

// New returns an Issuer whose keys are those of the file o.KeyFile, else the static o.Secret, else
// those in rdb under keys. A key file that cannot be read or parsed is an error. Close stops its
// key reload.
func New(rdb redis.UniversalClient, keys rediskeys.Scheme, o Options, log *zap.Logger) (*Issuer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	var ring keySource
	if o.KeyFile != "" {
		f, err := sessiontoken.OpenKeyFile(o.KeyFile, sessiontoken.FileKeysOptions{Poll: o.KeyFilePoll, Handover: o.KeyFileHandover, Now: o.Now}, log)
		if err != nil {
			return nil, err
		}
		ring = f
	} else {
		ring = sessiontoken.NewKeyring(rdb, keys, o.keyring(), log)
	}
	// No WithIssuedAt: a writer whose clock runs a second ahead would make its tokens "used
	// before issued" on the others.
	base := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(),
		jwt.WithAudience(sessiontoken.Audience), jwt.WithTimeFunc(o.Now),
	}
	return &Issuer{
		ring:    ring,
		o:       o,
		verify:  jwt.NewParser(base...),
		refresh: jwt.NewParser(append(base, jwt.WithLeeway(o.RefreshGrace))...),
	}, nil
}

// Close stops the key reload.
func (s *Issuer) Close() { s.ring.Close() }

// Load makes sure the current key exists (with keys in Redis, the first writer creates it) and is
// in memory.
func (s *Issuer) Load(ctx context.Context) error {
	_, _, err := s.ring.Signing(ctx)
	return err
}

// Issue starts a session for a new anonymous user.
func (s *Issuer) Issue(ctx context.Context) (Session, error) {
	now := s.o.Now()
	return s.sign(ctx, newUserID(), now.Unix(), now)
}

// Refresh returns a new token for the user of raw, a token that is current or expired less than
// RefreshGrace ago, with the same session start. A session older than MaxAge is ErrTooOld. A
// benchmark token is not refreshed: that would sign a benchmark user with the deployment's key.
func (s *Issuer) Refresh(ctx context.Context, raw string) (Session, error) {
	c, err := s.parse(ctx, s.refresh, raw)
	if err != nil {
		return Session{}, err
	}
	if sessiontoken.IsBenchUser(c.Subject) {
		return Session{}, fmt.Errorf("%w: benchmark sessions are not refreshed", auth.ErrUnauthenticated)
	}
	now := s.o.Now()
	if now.Unix() >= c.Start+int64(s.o.MaxAge/time.Second) {
		return Session{}, ErrTooOld
	}
	return s.sign(ctx, c.Subject, c.Start, now)
}

// Verify checks a current session token and returns its user.
func (s *Issuer) Verify(ctx context.Context, raw string) (string, error) {
	c, err := s.parse(ctx, s.verify, raw)
	if err != nil {
		return "", err
	}
	return c.Subject, nil
}

// sign issues a token for user in the session begun at start (unix seconds). It expires after
// TTL, or when the session reaches MaxAge if that is sooner.
func (s *Issuer) sign(ctx context.Context, user string, start int64, now time.Time) (Session, error) {
	kid, secret, err := s.ring.Signing(ctx)
	if err != nil {
		return Session{}, err
	}
	exp := min(now.Add(s.o.TTL).Unix(), start+int64(s.o.MaxAge/time.Second))
	signed, err := sessiontoken.Sign(sessiontoken.NewClaims(user, start, now.Unix(), exp), kid, secret)
	if err != nil {
		return Session{}, err
	}
	return Session{Token: signed, UserID: user, ExpiresAt: exp}, nil
}

// parse verifies raw with p. A key that Redis could not give is sessiontoken.ErrUnavailable
// (503); anything else wrong is auth.ErrUnauthenticated (401). A benchmark token (kid
// sessiontoken.BenchKeyID) must name a benchmark user, and no other token may: the benchmark key,
// which a load generator holds, can act for load-test users only, and the deployment's own keys
// never sign one (POST /session's ids begin with "anon-").
func (s *Issuer) parse(ctx context.Context, p *jwt.Parser, raw string) (sessiontoken.Claims, error) {
	var c sessiontoken.Claims
	bench := false
	_, err := p.ParseWithClaims(raw, &c, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		bench = kid == sessiontoken.BenchKeyID
		return s.verifyingKey(ctx, kid)
	})
	if errors.Is(err, sessiontoken.ErrUnavailable) {
		return sessiontoken.Claims{}, err
	}
	if err != nil {
		return sessiontoken.Claims{}, fmt.Errorf("%w: %w", auth.ErrUnauthenticated, err)
	}
	if err := ids.ValidUserID(c.Subject); err != nil {
		return sessiontoken.Claims{}, fmt.Errorf("%w: token subject: %w", auth.ErrUnauthenticated, err)
	}
	if bench != sessiontoken.IsBenchUser(c.Subject) {
		return sessiontoken.Claims{}, fmt.Errorf("%w: benchmark tokens name benchmark users (%s...), and only they do", auth.ErrUnauthenticated, sessiontoken.BenchUserPrefix)
	}
	if c.Start <= 0 || c.IssuedAt == nil || c.Start > c.IssuedAt.Unix() {
		return sessiontoken.Claims{}, fmt.Errorf("%w: session token has no valid sid_start", auth.ErrUnauthenticated)
	}
	return c, nil
}

// verifyingKey returns the secret that verifies a token signed under kid. The benchmark kid is
// settled here, before the keyring: with BenchSecret it is that secret, without it an unknown
// key, and either way it never becomes a lookup in Redis (where no key may bear its name).
func (s *Issuer) verifyingKey(ctx context.Context, kid string) ([]byte, error) {
	switch {
	case kid == "":
		return nil, errors.New("session token has no kid")
	case kid == sessiontoken.BenchKeyID && s.o.BenchSecret == nil:
		return nil, errors.New("unknown session key: benchmark sessions are off (BENCH_SESSION_KEY_FILE)")
	case kid == sessiontoken.BenchKeyID:
		return s.o.BenchSecret, nil
	}
	return s.ring.Verifying(ctx, kid)
}

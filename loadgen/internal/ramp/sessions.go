package ramp

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/likes/likes/loadgen/internal/likes"
	"github.com/likes/likes/pkg/sessiontoken"
)

// sessions signs the ramp's likes (IdentitySession) with the deployment's current session key:
// loadgen holds the keys as one more writer would, so a like costs one request, not a POST
// /session before it, and no SESSION_RATE limits the load.
type sessions struct {
	ring   *sessiontoken.Keyring
	follow *sessiontoken.Follower
}

// startSessions reads the current key from the Redis the view reads (creating it if no writer has
// in this rotation period), so that a ramp that cannot sign fails before its first phase.
func startSessions(ctx context.Context, v *redisView, cfg Config) (*sessions, error) {
	ring := sessiontoken.NewKeyring(v.keyClient(), v.keys, sessiontoken.KeyringOptions{
		Rotate: cfg.SessionKeyRotate,
		// The writers' default token life: a key loadgen creates lives as theirs would.
		Life: sessiontoken.DefaultTTL + sessiontoken.DefaultRefreshGrace,
	}, zap.NewNop())
	f, err := sessiontoken.Follow(ctx, ring, sessiontoken.FollowOptions{})
	if err != nil {
		ring.Close()
		return nil, fmt.Errorf("--identity session: the session key in Redis: %w", err)
	}
	return &sessions{ring: ring, follow: f}, nil
}

func (s *sessions) close() {
	s.follow.Close()
	s.ring.Close()
}

// benchSessions signs the ramp's likes (IdentityBench) with the benchmark key of
// cfg.BenchKeyFile, for users in the benchmark namespace, the only ones the writers accept that
// key's tokens for: it returns the likes' identity and the prefix of their user ids. The key
// never changes and is not kept in Redis, so a ramp signs without reading the deployment's Redis,
// whose session keys only the writers may read.
func benchSessions(cfg Config) (likes.Option, string, error) {
	key, err := sessiontoken.ReadBenchKey(cfg.BenchKeyFile)
	if err != nil {
		return nil, "", fmt.Errorf("--identity bench: %w", err)
	}
	return likes.WithSessions(sessiontoken.StaticKey{K: key}), sessiontoken.BenchUserPrefix + cfg.UserPrefix, nil
}

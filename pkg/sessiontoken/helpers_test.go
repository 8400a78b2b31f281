package sessiontoken

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/sessiontokentest"
)

var (
	ctx      = context.Background()
	testKeys = rediskeys.New("likes:")
)

// testOptions are short, valid settings on clk: hourly keys for tokens used up to 30 minutes.
func testOptions(clk *sessiontokentest.Clock) KeyringOptions {
	return KeyringOptions{Rotate: time.Hour, Life: 30 * time.Minute, Reload: time.Hour, UnknownKIDEvery: time.Nanosecond, Now: clk.Now}
}

// newKeyring returns a keyring on rdb, closed when the test ends.
func newKeyring(t *testing.T, rdb redis.UniversalClient, o KeyringOptions) *Keyring {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	k := NewKeyring(rdb, testKeys, o, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	t.Cleanup(k.Close)
	return k
}

func mustSigning(t *testing.T, k *Keyring) (string, []byte) {
	t.Helper()
	kid, secret, err := k.Signing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return kid, secret
}

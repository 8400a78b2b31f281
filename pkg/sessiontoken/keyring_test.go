package sessiontoken

import (
	"bytes"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/sessiontokentest"
)

// TestSignersShareKey: signers starting together on one Redis create one key between them (SET
// NX), and each verifies with the key any other signs with.
func TestSignersShareKey(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	rings := make([]*Keyring, 8)
	for i := range rings {
		rings[i] = newKeyring(t, srv.Client(t), testOptions(clk))
	}
	type got struct {
		kid    string
		secret []byte
		err    error
	}
	signing := make([]got, len(rings))
	var wg sync.WaitGroup
	for i, k := range rings {
		wg.Go(func() { // all race to create the first key
			kid, secret, err := k.Signing(ctx)
			signing[i] = got{kid, secret, err}
		})
	}
	wg.Wait()
	if keys := sessiontokentest.Keys(t, srv.Client(t), testKeys); len(keys) != 1 {
		t.Fatalf("session keys in Redis: %v; want exactly one", keys)
	}
	for i, g := range signing {
		if g.err != nil || g.kid != signing[0].kid || !bytes.Equal(g.secret, signing[0].secret) {
			t.Fatalf("signer %d signs with %q (%v); want the key %q all share", i, g.kid, g.err, signing[0].kid)
		}
		for j, other := range rings {
			if s, err := other.Verifying(ctx, g.kid); err != nil || !bytes.Equal(s, g.secret) {
				t.Errorf("key of signer %d on signer %d: %v", i, j, err)
			}
		}
	}
}

// TestRotation: after Rotate a new key signs; the old one keeps verifying on every signer
// (including one that never held the new key) until its last token can no longer be used, and
// expires from Redis then. A key gone from Redis is forgotten at the next reload.
func TestRotation(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	clk := sessiontokentest.NewClock(time.Hour)
	o := testOptions(clk)
	a, b := newKeyring(t, rdb, o), newKeyring(t, rdb, o)

	clk.Advance(55 * time.Minute) // 5 minutes before the period ends
	oldKID, oldSecret := mustSigning(t, a)
	start, _ := strconv.ParseInt(oldKID, 10, 64)
	wantEnd := time.Unix(start, 0).Add(o.Rotate + o.Life + clockSkew)
	if ttl := rdb.PTTL(ctx, testKeys.SessionKey(oldKID)).Val(); ttl <= 0 || absDiff(clk.Now().Add(ttl), wantEnd) > time.Second {
		t.Errorf("key %s expires at %v (PTTL %v); want period end + life + skew = %v", oldKID, clk.Now().Add(ttl), ttl, wantEnd)
	}

	clk.Advance(6 * time.Minute) // the next period
	newKID, newSecret := mustSigning(t, b)
	if newKID == oldKID {
		t.Fatalf("after the rotation interval the key is still %s", oldKID)
	}
	if kid, secret := mustSigning(t, a); kid != newKID || !bytes.Equal(secret, newSecret) {
		t.Error("the other signer signs with another key than the one created for the period")
	}
	if n := len(sessiontokentest.Keys(t, rdb, testKeys)); n != 2 {
		t.Errorf("%d keys in Redis after one rotation; want 2", n)
	}
	wantSecret(t, a, oldKID, oldSecret)
	wantSecret(t, b, oldKID, oldSecret) // b never held it

	// Gone from Redis (expired, or deleted to end every session): a reload forgets it at once.
	rdb.Del(ctx, testKeys.SessionKey(newKID))
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	wantUnknown(t, a, newKID)

	clk.Advance(wantEnd.Sub(clk.Now()) - time.Second)
	wantSecret(t, b, oldKID, oldSecret)
	clk.Advance(2 * time.Second)
	wantUnknown(t, b, oldKID)
}

func wantSecret(t *testing.T, k *Keyring, kid string, want []byte) {
	t.Helper()
	if got, err := k.Verifying(ctx, kid); err != nil || !bytes.Equal(got, want) {
		t.Errorf("Verifying(%s): %v; want its secret", kid, err)
	}
}

func wantUnknown(t *testing.T, k *Keyring, kid string) {
	t.Helper()
	if _, err := k.Verifying(ctx, kid); !errors.Is(err, errUnknownKey) {
		t.Errorf("Verifying(%s): %v; want an unknown key", kid, err)
	}
}

func absDiff(a, b time.Time) time.Duration {
	if a.After(b) {
		return a.Sub(b)
	}
	return b.Sub(a)
}

// TestReloadLoopDropsDeletedKey: the keyring's own goroutine rereads Redis, so a key an operator
// deletes stops verifying within one reload interval, without a restart.
func TestReloadLoopDropsDeletedKey(t *testing.T) {
	srv := redistest.Start(t)
	o := testOptions(sessiontokentest.NewClock(time.Hour))
	o.Reload = 20 * time.Millisecond
	o.UnknownKIDEvery = time.Hour // no lookup on the miss: only the reload can have dropped it
	k := newKeyring(t, srv.Client(t), o)
	kid, _ := mustSigning(t, k)
	srv.Client(t).Del(ctx, testKeys.SessionKey(kid))
	poll.Until(t, 5*time.Second, "a deleted key stops verifying with a 20ms reload interval", func() bool {
		_, err := k.Verifying(ctx, kid)
		return errors.Is(err, errUnknownKey)
	})
}

// TestImplausibleKIDsNotLookedUp: a kid that cannot be live (not a canonical unix second, in the
// future beyond the clock skew, past its end) is refused without asking Redis, even when a key of
// that name is there.
func TestImplausibleKIDsNotLookedUp(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	k := newKeyring(t, srv.Client(t), testOptions(clk))
	valid := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY" // 32 bytes, base64url
	now := clk.Now().Unix()
	for _, kid := range []string{"007", "-3600", "abc", strconv.FormatInt(now+3600, 10), strconv.FormatInt(now-3*3600, 10)} {
		srv.Client(t).Set(ctx, testKeys.SessionKey(kid), valid, 0)
		wantUnknown(t, k, kid)
	}
}

// TestBadKeyValue: a key in Redis that is not a base64url key of the right size is never signed
// or verified with, whoever wrote it; one an operator set without an expiry lives until its
// period says.
func TestBadKeyValue(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	k := newKeyring(t, srv.Client(t), testOptions(clk))
	kid := strconv.FormatInt(clk.Now().Unix()-1, 10) // the clock is one second into the period
	for _, v := range []string{"short", "!!not base64url!!", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYx"} {
		srv.Client(t).Set(ctx, testKeys.SessionKey(kid), v, 0)
		if _, _, err := k.Signing(ctx); !errors.Is(err, ErrUnavailable) {
			t.Errorf("signing with %q in Redis: %v; want ErrUnavailable", v, err)
		}
	}
	srv.Client(t).Set(ctx, testKeys.SessionKey(kid), "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY", 0)
	if got, secret := mustSigning(t, k); got != kid || string(secret) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("signing with an operator's key: %q %q", got, secret)
	}
	o := testOptions(clk)
	clk.Advance(o.Rotate + o.Life + clockSkew - 2*time.Second)
	wantSecret(t, k, kid, []byte("0123456789abcdef0123456789abcdef"))
	clk.Advance(2 * time.Second)
	wantUnknown(t, k, kid)
}

// TestStaticSecret: with a static secret the keyring signs with kid "static", knows no other, and
// needs no Redis.
func TestStaticSecret(t *testing.T) {
	o := testOptions(sessiontokentest.NewClock(time.Hour))
	o.Secret = []byte("0123456789abcdef0123456789abcdef")
	k := newKeyring(t, nil, o)
	if kid, secret := mustSigning(t, k); kid != StaticKID || !bytes.Equal(secret, o.Secret) {
		t.Errorf("signing with %q %q; want the static key", kid, secret)
	}
	wantSecret(t, k, StaticKID, o.Secret)
	if _, err := k.Verifying(ctx, strconv.FormatInt(time.Now().Unix(), 10)); !errors.Is(err, errUnknownKey) {
		t.Errorf("a rotating kid with a static secret: %v; want an unknown key", err)
	}
	if err := k.Reload(ctx); err != nil {
		t.Errorf("reload of a static keyring: %v", err)
	}
}

func TestKeyringOptionsValidate(t *testing.T) {
	d := KeyringOptions{Rotate: DefaultKeyRotate, Life: DefaultTTL + DefaultRefreshGrace}
	if err := d.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := map[string]func(*KeyringOptions){
		"short secret":         func(o *KeyringOptions) { o.Secret = []byte("short") },
		"negative life":        func(o *KeyringOptions) { o.Life = -time.Second },
		"rotation below 1s":    func(o *KeyringOptions) { o.Rotate = 0 },
		"rotation not seconds": func(o *KeyringOptions) { o.Rotate = 1500 * time.Millisecond },
		"too many live keys":   func(o *KeyringOptions) { o.Rotate = 10 * time.Minute },
	}
	for name, f := range tests {
		o := d
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	o := d
	o.Secret, o.Rotate = []byte("0123456789abcdef0123456789abcdef"), 0
	if err := o.Validate(); err != nil {
		t.Errorf("static secret ignores rotation: %v", err)
	}
}

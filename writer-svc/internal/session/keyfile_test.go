package session

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/sessiontokentest"
)

// fileKey is a key of a test's key file: its id, its secret, and its line.
type fileKey struct {
	kid    string
	secret []byte
}

func newFileKey(kid string, c byte) fileKey {
	return fileKey{kid: kid, secret: bytes.Repeat([]byte{c}, sessiontoken.MinSecretLen)}
}

func (k fileKey) line() string { return k.kid + " " + base64.RawURLEncoding.EncodeToString(k.secret) }

// writeKeys replaces the key file at path with keys, the last signing, as the kubelet does: a
// new file renamed over the old.
func writeKeys(t *testing.T, path string, keys ...fileKey) {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k.line() + "\n")
	}
	if err := os.WriteFile(path+".new", []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// sessionKeysInRedis lists, with SCAN, every key of the Redis key space named like a session
// signing key.
func sessionKeysInRedis(t *testing.T, rdb redis.UniversalClient) []string {
	t.Helper()
	var got []string
	iter := rdb.Scan(ctx, 0, testKeys.SessionKey("*"), 100).Iterator()
	for iter.Next(ctx) {
		got = append(got, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestKeyFileKeepsKeysOutOfRedis: with a key file, sessions are issued, verified and refreshed
// under the file's last key, the static secret is not used, and Redis holds no signing key.
func TestKeyFileKeepsKeysOutOfRedis(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	clk := sessiontokentest.NewClock(time.Hour)
	path := filepath.Join(t.TempDir(), "session.key")
	k1, k2 := newFileKey("k1", 'a'), newFileKey("k2", 'b')
	writeKeys(t, path, k1, k2)
	o := testOptions(clk)
	o.KeyFile = path
	o.Secret = bytes.Repeat([]byte{'s'}, 32) // AUTH_SESSION_SECRET too: the file wins
	s := newIssuer(t, rdb, o)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}

	got := mustIssue(t, s)
	if kid, _ := parsed(t, got.Token); kid != "k2" {
		t.Errorf("signed under kid %q; want k2, the file's last key", kid)
	}
	wantUser(t, s, got.Token, got.UserID)
	clk.Advance(o.TTL + time.Minute)
	if fresh, err := s.Refresh(ctx, got.Token); err != nil || fresh.UserID != got.UserID {
		t.Errorf("refresh: %+v, %v; want a new token for %s", fresh, err, got.UserID)
	}
	_, c := parsed(t, got.Token)
	now := clk.Now().Unix()
	c = sessiontoken.NewClaims(c.Subject, now, now, now+60)
	wantUser(t, s, forge(t, c, "k1", k1.secret), c.Subject) // every key of the file verifies
	_, err := s.Verify(ctx, forge(t, c, sessiontoken.StaticKID, o.Secret))
	wantRefused(t, "a token of AUTH_SESSION_SECRET beside a key file", err)

	if keys := sessionKeysInRedis(t, rdb); len(keys) != 0 {
		t.Errorf("session keys in Redis: %v; want none with SESSION_KEY_FILE", keys)
	}
}

// TestKeyFileRotation: an appended key verifies as soon as the file is read again and signs after
// the handover; a key removed from the file stops verifying its tokens once the file is read
// again.
func TestKeyFileRotation(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	clk := sessiontokentest.NewClock(time.Hour)
	path := filepath.Join(t.TempDir(), "session.key")
	k1, k2 := newFileKey("k1", 'a'), newFileKey("k2", 'b')
	writeKeys(t, path, k1)
	o := testOptions(clk)
	o.KeyFile, o.KeyFilePoll, o.KeyFileHandover = path, 10*time.Millisecond, time.Minute
	s := newIssuer(t, rdb, o)
	old := mustIssue(t, s)
	if kid, _ := parsed(t, old.Token); kid != "k1" {
		t.Fatalf("signed under %q; want k1", kid)
	}

	writeKeys(t, path, k1, k2)
	now := clk.Now().Unix()
	byK2 := forge(t, sessiontoken.NewClaims("anon-by-k2", now, now, now+60), "k2", k2.secret)
	awaitVerify(t, s, byK2, true, "a token of the appended k2")
	if kid, _ := parsed(t, mustIssue(t, s).Token); kid != "k1" {
		t.Errorf("within the handover, signed under %q; want k1 still", kid)
	}
	clk.Advance(o.KeyFileHandover)
	if kid, _ := parsed(t, mustIssue(t, s).Token); kid != "k2" {
		t.Errorf("after the handover, signed under %q; want k2", kid)
	}
	wantUser(t, s, old.Token, old.UserID)

	writeKeys(t, path, k2)
	awaitVerify(t, s, old.Token, false, "a token of k1, removed from the file")
	if _, err := s.Refresh(ctx, old.Token); err == nil {
		t.Error("a token of the removed k1 was refreshed")
	}
	if keys := sessionKeysInRedis(t, rdb); len(keys) != 0 {
		t.Errorf("session keys in Redis: %v; want none", keys)
	}
}

// awaitVerify waits until raw verifies (ok) or is refused (!ok).
func awaitVerify(t *testing.T, s *Issuer, raw string, ok bool, what string) {
	t.Helper()
	err := poll.For(10*time.Second, func() error {
		_, err := s.Verify(ctx, raw)
		if (err == nil) != ok {
			return fmt.Errorf("%s: Verify = %w", what, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the key file is read every 10ms, yet after 10s %v", err)
	}
}

// TestKeyFileRefused: a writer does not start on a key file it cannot use, and says why.
func TestKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("k1 "+base64.RawURLEncoding.EncodeToString(make([]byte, 16))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	malformed := filepath.Join(dir, "malformed.key")
	if err := os.WriteFile(malformed, []byte("just-a-secret-without-a-key-id-at-all-xxxxxxxxxxxx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{short: "has 16 bytes; at least 32", malformed: "line 1: 1 fields; want `kid base64url-key`",
		filepath.Join(dir, "missing.key"): "no such file"} {
		o := testOptions(sessiontokentest.NewClock(time.Hour))
		o.KeyFile = path
		if s, err := New(nil, testKeys, o, zap.NewNop()); err == nil || !strings.Contains(err.Error(), want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v; want an error with %q", filepath.Base(path), err, want)
		}
	}
}

package sessiontoken

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/sessiontokentest"
)

// keyLine is a line of a key file for kid with a key of n bytes of c.
func keyLine(kid string, c byte, n int) string {
	return kid + " " + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{c}, n))
}

func TestParseKeyFile(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    []string // key ids, the signing one last
		wantErr string
	}{
		{name: "one key", give: keyLine("k1", 'a', 32) + "\n", want: []string{"k1"}},
		{name: "comments, blanks, CRLF, padding", give: "# rotated 2026-12\n\n" + keyLine("k1", 'a', 32) + "\r\n  " +
			"k2 " + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{'b'}, 40)) + "  \n", want: []string{"k1", "k2"}},
		{name: "empty", give: "# nothing\n\n", wantErr: "no key"},
		{name: "short key", give: keyLine("k1", 'a', 31), wantErr: "line 1: key \"k1\" has 31 bytes; at least 32"},
		{name: "not base64url", give: "k1 " + strings.Repeat("+/", 30), wantErr: "line 1: key \"k1\" is not base64url"},
		{name: "key alone", give: base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{'a'}, 32)), wantErr: "1 fields"},
		{name: "three fields", give: keyLine("k1", 'a', 32) + " extra", wantErr: "3 fields"},
		{name: "bad kid", give: keyLine("k\"1", 'a', 32), wantErr: "only letters, digits"},
		{name: "bench kid", give: keyLine(BenchKeyID, 'a', 32), wantErr: "benchmark key's"},
		{name: "duplicate", give: keyLine("k1", 'a', 32) + "\n" + keyLine("k1", 'b', 32), wantErr: "line 2: key id \"k1\" appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ParseKeyFile([]byte(tt.give))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v; want an error with %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "YWFh") || strings.Contains(err.Error(), "+/+/") {
					t.Errorf("the error quotes the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, k := range keys {
				ids = append(ids, k.ID)
				if len(k.Secret) < MinSecretLen {
					t.Errorf("key %s: %d bytes", k.ID, len(k.Secret))
				}
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got ids %v; want %v", ids, tt.want)
			}
		})
	}
}

func TestNewKeyLineParses(t *testing.T) {
	a, err := NewKeyLine("20261207T190000Z")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewKeyLine("20261207T190001Z")
	keys, err := ParseKeyFile([]byte(a + "\n" + b + "\n"))
	if err != nil || len(keys) != 2 || bytes.Equal(keys[0].Secret, keys[1].Secret) {
		t.Fatalf("two new lines: %v, %v; want two distinct keys", keys, err)
	}
	if _, err := NewKeyLine("bad kid"); err == nil {
		t.Error("a kid with a space was accepted")
	}
}

// replaceKeyFile replaces the key file at path with lines, as an operator's editor or the kubelet
// would: a new file renamed over the old.
func replaceKeyFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func openKeyFile(t *testing.T, path string, o FileKeysOptions) *FileKeys {
	t.Helper()
	f, err := OpenKeyFile(path, o, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func signingKID(t *testing.T, f *FileKeys) string {
	t.Helper()
	kid, _, err := f.Signing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return kid
}

// TestFileKeysRotation: the last key signs and all verify; an appended key verifies at once and
// signs after the handover; a removed key stops verifying at the next reload; a malformed file
// keeps the keys in memory.
func TestFileKeysRotation(t *testing.T) {
	clk := sessiontokentest.NewClock(time.Hour)
	path := filepath.Join(t.TempDir(), "session.key")
	k1, k2 := keyLine("k1", 'a', 32), keyLine("k2", 'b', 32)
	replaceKeyFile(t, path, k1)
	f := openKeyFile(t, path, FileKeysOptions{Poll: time.Hour, Handover: time.Minute, Now: clk.Now})
	if got := signingKID(t, f); got != "k1" {
		t.Fatalf("signs with %s; want k1", got)
	}

	replaceKeyFile(t, path, k1, k2)
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if s, err := f.Verifying(ctx, "k2"); err != nil || !bytes.Equal(s, bytes.Repeat([]byte{'b'}, 32)) {
		t.Errorf("k2 right after it was appended: %v; want it verifying", err)
	}
	if got := signingKID(t, f); got != "k1" {
		t.Errorf("signs with %s within the handover; want k1 still", got)
	}
	clk.Advance(time.Minute)
	if got := signingKID(t, f); got != "k2" {
		t.Errorf("signs with %s after the handover; want k2", got)
	}

	replaceKeyFile(t, path, "not a key file")
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a malformed file: %v; want its error", err)
	}
	if _, err := f.Verifying(ctx, "k1"); err != nil || signingKID(t, f) != "k2" {
		t.Errorf("after a malformed file: k1 %v, signing %s; want the keys kept", err, signingKID(t, f))
	}

	replaceKeyFile(t, path, k2)
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Verifying(ctx, "k1"); err == nil {
		t.Error("k1 verifies after its removal from the file")
	}
	if got := signingKID(t, f); got != "k2" {
		t.Errorf("signs with %s; want k2", got)
	}
}

// TestFileKeysSignerRemovedDuringHandover: a key removed from the file never signs again, even
// within the handover of its successor.
func TestFileKeysSignerRemovedDuringHandover(t *testing.T) {
	clk := sessiontokentest.NewClock(time.Hour)
	path := filepath.Join(t.TempDir(), "session.key")
	replaceKeyFile(t, path, keyLine("k1", 'a', 32))
	f := openKeyFile(t, path, FileKeysOptions{Poll: time.Hour, Handover: time.Hour, Now: clk.Now})
	replaceKeyFile(t, path, keyLine("k2", 'b', 32))
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := signingKID(t, f); got != "k2" {
		t.Errorf("signs with %s; want k2, the only key in the file", got)
	}
}

// TestFileKeysPolls: the file is read again on its own, without a call to Reload.
func TestFileKeysPolls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.key")
	replaceKeyFile(t, path, keyLine("k1", 'a', 32))
	f := openKeyFile(t, path, FileKeysOptions{Poll: 10 * time.Millisecond, Handover: -1})
	replaceKeyFile(t, path, keyLine("k1", 'a', 32), keyLine("k2", 'b', 32))
	err := poll.For(10*time.Second, func() error {
		if kid, _, _ := f.Signing(ctx); kid != "k2" {
			return fmt.Errorf("signs with %s; want the appended k2", kid)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("polled every 10ms for 10s: %v", err)
	}
}

func TestOpenKeyFileRefuses(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	replaceKeyFile(t, short, keyLine("k1", 'a', 16))
	for path, want := range map[string]string{
		short:                         "at least 32",
		filepath.Join(dir, "missing"): "no such file",
	} {
		if _, err := OpenKeyFile(path, FileKeysOptions{}, zap.NewNop()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error with %q", filepath.Base(path), err, want)
		}
	}
}

package sessiontoken

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/pkg/ids"
)

// writeKeyFile writes content to a file of the test's and returns its path.
func writeKeyFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bench-session.key")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadBenchKey: the key is the file's content without surrounding white space, under the
// benchmark kid; a key shorter than the HS256 minimum, or a file that cannot be read, is an error
// that says what is wrong.
func TestReadBenchKey(t *testing.T) {
	exact := strings.Repeat("k", MinBenchKeyLen)
	for _, tt := range []struct {
		name    string
		give    string
		want    string
		wantErr string
	}{
		{name: "trailing newline", give: exact + "\n", want: exact},
		{name: "surrounding space", give: " \t" + exact + "x \r\n", want: exact + "x"},
		{name: "inner space kept", give: "0123456789abcdef 0123456789abcdef\n", want: "0123456789abcdef 0123456789abcdef"},
		{name: "one byte short", give: exact[1:] + "\n", wantErr: "at least 32"},
		{name: "short once trimmed", give: "  short  " + strings.Repeat(" ", 40), wantErr: "holds 5 bytes"},
		{name: "empty", give: "", wantErr: "holds 0 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ReadBenchKey(writeKeyFile(t, tt.give))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("got key %v, %v; want an error saying %q", key, err, tt.wantErr)
				}
				return
			}
			if err != nil || key.ID != BenchKeyID || string(key.Secret) != tt.want {
				t.Errorf("got %+v, %v; want kid %s, secret %q", key, err, BenchKeyID, tt.want)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "missing.key")
	if _, err := ReadBenchKey(missing); err == nil || !strings.Contains(err.Error(), "benchmark session key") || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing file: %v; want an error naming the benchmark key and the path", err)
	}
}

// TestBenchNamespace: the prefix is a valid start of a user id, its own ids are in the namespace,
// and near misses are not.
func TestBenchNamespace(t *testing.T) {
	if err := ids.ValidUserID(BenchUserPrefix + "lg1-u1"); err != nil {
		t.Fatalf("a benchmark user id: %v; want valid", err)
	}
	for user, want := range map[string]bool{
		BenchUserPrefix + "lg1-u1": true, "bench-": true,
		"bench": false, "benchmark-u1": false, "Bench-u1": false, "anon-bench-u1": false, "": false,
	} {
		if got := IsBenchUser(user); got != want {
			t.Errorf("IsBenchUser(%q) = %v; want %v", user, got, want)
		}
	}
}

// TestMinterSignsBenchTokens: a Minter on the static benchmark key makes, with no allocation per
// token, the token Sign makes under the benchmark kid, which verifies with the key.
func TestMinterSignsBenchTokens(t *testing.T) {
	key, err := ReadBenchKey(writeKeyFile(t, string(testSecret)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := NewMinter(StaticKey{K: key}, time.Hour)
	user := []byte(BenchUserPrefix + "lg1-u1")
	got := m.AppendToken(nil, user, testNow)
	want, err := Sign(NewClaims(string(user), testNow.Unix(), testNow.Unix(), testNow.Add(time.Hour).Unix()), BenchKeyID, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("minted %s\nSign   %s", got, want)
	}
	var c Claims
	tok, err := jwt.NewParser(jwt.WithTimeFunc(func() time.Time { return testNow }), jwt.WithAudience(Audience)).
		ParseWithClaims(string(got), &c, func(*jwt.Token) (any, error) { return testSecret, nil })
	if err != nil || tok.Header["kid"] != BenchKeyID || c.Subject != string(user) {
		t.Fatalf("token: %v, kid %v, sub %q; want kid %s for %s", err, tok.Header["kid"], c.Subject, BenchKeyID, user)
	}
	if n := testing.AllocsPerRun(1000, func() { got = m.AppendToken(got[:0], user, testNow) }); n != 0 {
		t.Errorf("%v allocations per benchmark token; want 0", n)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// sessionKeyFile writes a key file of lines and returns its path.
func sessionKeyFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "session.key")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// keyLine is a key file line for kid with a key of n bytes of c.
func keyLine(kid string, c byte, n int) string {
	return kid + " " + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{c}, n))
}

// TestSessionKeyFile: a writer with SESSION_KEY_FILE issues sessions signed by the file's last
// key, and likes with them, and no signing key is ever written to Redis (SCAN finds none).
func TestSessionKeyFile(t *testing.T) {
	path := sessionKeyFile(t, "# the old key, verifying only", keyLine("old", 'a', 32), keyLine("current", 'b', 48))
	w := startWriter(t, nil, "--session-key-file", path)
	tok, user := startSession(t, w)
	got, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	if kid := got.Header["kid"]; kid != "current" {
		t.Errorf("the session is signed under kid %v; want current, the file's last key", kid)
	}
	wantLike(t, w.do(t, http.MethodPost, "/like/42", "Authorization: Bearer "+tok), "42", 1, true)
	if w.RDB.Exists(context.Background(), keys.User("42", user)).Val() != 1 {
		t.Errorf("the like was not recorded for the session's user %s", user)
	}
	var found []string
	iter := w.RDB.Scan(context.Background(), 0, keys.SessionKey("*"), 100).Iterator()
	for iter.Next(context.Background()) {
		found = append(found, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("session keys in Redis: %v; want none with SESSION_KEY_FILE", found)
	}
}

// TestSessionKeyFileRefused: a writer does not start on a key file it cannot use, and its error
// names the setting and what is wrong, never the key.
func TestSessionKeyFileRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"short key", []string{keyLine("k1", 'a', 31)}, `line 1: key "k1" has 31 bytes; at least 32`},
		{"no key id", []string{base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{'a'}, 32))}, "line 1: 1 fields; want `kid base64url-key`"},
		{"not base64url", []string{keyLine("k1", 'a', 32), "k2 !!!!"}, `line 2: key "k2" is not base64url`},
		{"empty", []string{"# no key yet"}, "no key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := sessionKeyFile(t, tt.lines...)
			_, err := loadConfig([]string{"writer-svc", "--session-key-file", path}, func(string) string { return "" }, &strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), "SESSION_KEY_FILE") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error naming SESSION_KEY_FILE and saying %q", err, tt.want)
			}
		})
	}
	_, err := loadConfig([]string{"writer-svc"}, func(k string) string {
		return map[string]string{"SESSION_KEY_FILE": "/nonexistent/session.key"}[k]
	}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing SESSION_KEY_FILE: %v; want refused", err)
	}
}

// TestRunWarnsOfSessionKeysInRedis: without SESSION_KEY_FILE or AUTH_SESSION_SECRET the writer
// keeps its signing keys in Redis, and says at start what that exposes; with a file it does not.
func TestRunWarnsOfSessionKeysInRedis(t *testing.T) {
	const warning = "session keys in Redis: anyone with the writer's Redis rights can sign sessions; set SESSION_KEY_FILE"
	srv := redistest.Start(t)
	for _, tt := range []struct {
		name string
		env  map[string]string
		warn bool
	}{
		{"keys in Redis", map[string]string{}, true},
		{"key file", map[string]string{"SESSION_KEY_FILE": sessionKeyFile(t, keyLine("k1", 'a', 32))}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.env["REDIS_URL"], tt.env["LISTEN_ADDR"], tt.env["LOG_LEVEL"] = srv.URL, freeport.Addr(t), "warn"
			var out bytes.Buffer // written by run, read once it has returned
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- run(ctx, []string{"writer-svc"}, func(k string) string { return tt.env[k] }, &out) }() // returns once ctx is cancelled
			client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			err := poll.For(10*time.Second, func() error {
				resp, err := client.Get("http://" + tt.env["LISTEN_ADDR"] + "/healthz")
				if err == nil {
					resp.Body.Close()
				}
				return err
			})
			cancel()
			if runErr := <-done; runErr != nil || err != nil {
				t.Fatalf("run: %v; /healthz: %v", runErr, err)
			}
			if got := strings.Contains(out.String(), warning); got != tt.warn {
				t.Errorf("the start log has the warning: %v; want %v. Log:\n%s", got, tt.warn, out.String())
			}
		})
	}
}

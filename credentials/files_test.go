package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redisacl"
	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/redistest"
)

// TestFilesAreMadeOnceAndServe: the first run makes every secret; a data node started on the ACL
// file it wrote lets the writer in with the password in the writer's directory (and nobody
// without one); a second run keeps every secret, and one deleted is made anew while the others
// stay.
func TestFilesAreMadeOnceAndServe(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	if err := run(context.Background(), []string{"files", "-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "made bench-session.key, default.password, fanout.password") {
		t.Errorf("first run said %q; want every secret made", out.String())
	}
	first := read(t, dir)

	srv := redistest.Start(t, "--aclfile", filepath.Join(dir, "redis", dataACLFile), "--protected-mode", "yes")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	writer := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: redisacl.Writer, Password: first["writer/writer.password"], MaxRetries: -1})
	defer writer.Close()
	if err := writer.Set(ctx, "likes:probe", "1", 0).Err(); err != nil {
		t.Errorf("the writer with its password from its directory: %v", err)
	}
	nobody := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer nobody.Close()
	if err := nobody.Ping(ctx).Err(); err == nil {
		t.Error("no credentials: PING answered")
	}

	out.Reset()
	if err := run(context.Background(), []string{"files", "-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kept") {
		t.Errorf("second run said %q; want kept", out.String())
	}
	if second := read(t, dir); !equal(first, second) {
		t.Error("a second run changed the credentials")
	}

	if err := os.Remove(filepath.Join(dir, "fanout", "fanout.password")); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"files", "-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	third := read(t, dir)
	if third["fanout/fanout.password"] == "" || third["fanout/fanout.password"] == first["fanout/fanout.password"] {
		t.Error("a deleted password was not made anew")
	}
	if third["writer/writer.password"] != first["writer/writer.password"] || third["redis/monitor.password"] != first["loadgen/monitor.password"] {
		t.Error("making one password anew changed the others, or the monitor's differs between its consumers")
	}
	if third["redis/redis-users.acl"] == first["redis/redis-users.acl"] {
		t.Error("the ACL file was not written again for the new password")
	}
}

// TestFilesGoOnlyToTheirConsumers: fanout's directory holds its own password and nothing else;
// no consumer but the writer and loadgen gets the benchmark key.
func TestFilesGoOnlyToTheirConsumers(t *testing.T) {
	dir := t.TempDir()
	if err := run(context.Background(), []string{"files", "-dir", dir}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	got := read(t, dir)
	for name := range got {
		consumer, file, _ := strings.Cut(name, "/")
		if file == benchKeyFile && consumer != "writer" && consumer != "loadgen" {
			t.Errorf("%s has the benchmark key", consumer)
		}
		if file == sessionKeyFile && consumer != "writer" {
			t.Errorf("%s has the session signing keys", consumer)
		}
		if consumer == "fanout" && file != "fanout.password" {
			t.Errorf("fanout's directory holds %s", file)
		}
		if strings.HasSuffix(file, ".password") && strings.TrimSuffix(file, ".password") == redisacl.Writer && consumer != "writer" {
			t.Errorf("%s has the writer's password", consumer)
		}
	}
}

// TestFilesMakeSessionKeyOnce: the writers get a session key file they accept, made at the first
// run; a later run keeps it as it is, a key an operator appended included.
func TestFilesMakeSessionKeyOnce(t *testing.T) {
	dir := t.TempDir()
	if err := run(context.Background(), []string{"files", "-dir", dir}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "writer", sessionKeyFile)
	first, err := sessiontoken.ReadKeyFile(path)
	if err != nil || len(first) != 1 {
		t.Fatalf("the writers' %s: %v, %v; want one key", sessionKeyFile, first, err)
	}
	if err := run(context.Background(), []string{"session-key", "-kid", "rotated", "-file", path}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"files", "-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	got, err := sessiontoken.ReadKeyFile(path)
	if err != nil || len(got) != 2 || got[0].ID != first[0].ID || got[1].ID != "rotated" || !strings.Contains(out.String(), "kept") {
		t.Errorf("after a key was appended, a second run left %v (%v) and said %q; want both keys kept", got, err, out.String())
	}
	if err := run(context.Background(), []string{"session-key", "-file", path, "-drop", first[0].ID}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if got, err := sessiontoken.ReadKeyFile(path); err != nil || len(got) != 1 || got[0].ID != "rotated" {
		t.Errorf("after -drop of the first key: %v, %v; want the rotated key alone", got, err)
	}
	if err := run(context.Background(), []string{"session-key", "-file", path, "-drop", "rotated"}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("-drop of the only key: %v; want refused", err)
	}
	if got, err := sessiontoken.ReadKeyFile(path); err != nil || len(got) != 1 {
		t.Errorf("a refused -drop changed the file: %v, %v", got, err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not a key file\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"files", "-dir", dir}, &out); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a malformed %s: %v; want refused, naming the line", sessionKeyFile, err)
	}
}

func TestFilesRefuseATruncatedSecret(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "writer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "writer", "writer.password"), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"files", "-dir", dir}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("a 5-byte password: %v; want refused", err)
	}
}

// read returns every file under dir by its path relative to dir.
func read(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = strings.TrimRight(string(b), "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

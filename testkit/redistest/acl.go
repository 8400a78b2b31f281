package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redisacl"
)

// ACL is a deployment's Redis users for a test (pkg/redisacl): fresh passwords, each in a file as a
// deployment hands it to a program (REDIS_PASSWORD_FILE).
type ACL struct {
	Prefix    string
	Passwords redisacl.Passwords
	dir       string
}

// NewACL makes passwords for every user under the key prefix and writes them to files.
func NewACL(t testing.TB, prefix string) *ACL {
	t.Helper()
	a := &ACL{Prefix: prefix, Passwords: redisacl.NewPasswords(), dir: t.TempDir()}
	for u, p := range a.Passwords {
		if err := os.WriteFile(a.PasswordFile(u), []byte(p+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// PasswordFile is the file that holds user's password.
func (a *ACL) PasswordFile(user string) string { return filepath.Join(a.dir, user+".password") }

// Start runs a data node that requires these users (the data nodes' ACL file, protected mode on),
// as deployments run theirs.
func (a *ACL) Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	text, err := redisacl.DataNodes(a.Prefix, a.Passwords)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Start(t, append([]string{"--aclfile", file, "--protected-mode", "yes"}, extra...)...)
}

// Client returns a client of s that connects as user (with no user, as nobody), closed at the end
// of the test.
func (a *ACL) Client(t testing.TB, s *Server, user string) *redis.Client {
	opt := &redis.Options{Addr: s.Addr, MaxRetries: -1}
	if user != "" {
		opt.Username, opt.Password = user, a.Passwords[user]
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// StartSentinel runs one Sentinel that requires these users (the Sentinels' ACL file) and
// monitors primary, a data node of Start, as the Sentinel user, under the name "mymaster", and
// waits until it has seen the primary answer.
func (a *ACL) StartSentinel(t testing.TB, primary *Server) *Server {
	t.Helper()
	text, err := redisacl.Sentinels(a.Prefix, a.Passwords)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	aclFile, conf := filepath.Join(dir, "users.acl"), filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(aclFile, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := a.Passwords[redisacl.Sentinel]
	return start(t, "+monitor master", func(port int) []string {
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode yes\ndaemonize no\ndir %s\naclfile %s\n", port, dir, aclFile) +
			fmt.Sprintf("sentinel monitor mymaster 127.0.0.1 %d 1\n", primary.port) +
			fmt.Sprintf("sentinel auth-user mymaster %s\nsentinel auth-pass mymaster %s\n", redisacl.Sentinel, pw) +
			fmt.Sprintf("sentinel sentinel-user %s\nsentinel sentinel-pass %s\n", redisacl.Sentinel, pw)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatalf("write sentinel config: %v", err)
		}
		return []string{conf, "--sentinel"}
	})
}

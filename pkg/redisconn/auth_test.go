package redisconn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/redisacl"
	"github.com/likes/likes/testkit/redistest"
)

// TestConnectsAsItsUser: with REDIS_USERNAME and REDIS_PASSWORD_FILE a service reaches a Redis
// that requires them, directly and through Sentinels that require them too; without them, it
// does not.
func TestConnectsAsItsUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acl := redistest.NewACL(t, "likes:")
	primary := acl.Start(t)
	sentinel := acl.StartSentinel(t, primary)
	for _, c := range []Config{
		{URL: primary.URL},
		{SentinelAddrs: []string{sentinel.Addr}, SentinelMaster: "mymaster"},
	} {
		c.Timeout = 2 * time.Second
		anonymous, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := anonymous.Ping(ctx).Err(); err == nil {
			t.Errorf("%s without credentials: PING answered", c.Mode())
		}
		_ = anonymous.Close()

		c.Username, c.PasswordFile = redisacl.Writer, acl.PasswordFile(redisacl.Writer)
		client, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Set(ctx, "likes:probe", c.Mode(), 0).Err(); err != nil {
			t.Errorf("%s as the writer: %v", c.Mode(), err)
		}
		_ = client.Close()
	}
}

func TestPasswordFileProblemsAreClear(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		c    Config
		want string
	}{
		{Config{URL: "redis://r:6379/0", PasswordFile: empty}, "without a user"},
		{Config{URL: "redis://r:6379/0", Username: "writer", PasswordFile: empty}, "is empty"},
		{Config{URL: "redis://r:6379/0", Username: "writer", PasswordFile: empty + ".missing"}, "REDIS_PASSWORD_FILE"},
	} {
		if _, err := New(tt.c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v; want an error saying %q", tt.c, err, tt.want)
		}
	}
}

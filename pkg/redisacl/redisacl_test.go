package redisacl_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redisacl"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// likeScript stands for the writer's like script: every like is stored by a script call.
const likeScript = `redis.call('INCR', KEYS[1]); return redis.call('PUBLISH', KEYS[2], ARGV[1])`

// TestPrivileges runs a data node with the ACL file a deployment gets and shows what each user
// may do: the writer stores likes and reads the session keys; fanout reads counts, hears updates
// and adds its viewers, but can neither read a session key (and mint a session for any user) nor
// store a like; the monitor reads INFO and subscriber counts, no key; with no credentials
// nothing works.
func TestPrivileges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl := redistest.NewACL(t, "likes:")
	srv := acl.Start(t)
	keys := rediskeys.New("likes:")
	sessionKey := keys.SessionKey("1764633600")

	writer := acl.Client(t, srv, redisacl.Writer)
	must(t, writer.Set(ctx, sessionKey, "secret", 0).Err())
	must(t, writer.Eval(ctx, likeScript, []string{keys.Count("42"), keys.Channel("42")}, "1").Err())
	must(t, writer.Get(ctx, sessionKey).Err())
	must(t, writer.Info(ctx, "memory").Err())
	must(t, writer.Do(ctx, "WAIT", 0, 10).Err())
	refused(t, "writer FLUSHALL", writer.FlushAll(ctx).Err())
	refused(t, "writer CONFIG SET", writer.ConfigSet(ctx, "maxmemory", "0").Err())
	refused(t, "writer KEYS", writer.Keys(ctx, "*").Err())
	refused(t, "writer SET outside the prefix", writer.Set(ctx, "other:key", "1", 0).Err())

	fanout := acl.Client(t, srv, redisacl.Fanout)
	sub := fanout.Subscribe(ctx, keys.Channel("42"))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("fanout SUBSCRIBE to a post's channel: %v", err)
	}
	created := fanout.Subscribe(ctx, keys.Created())
	defer created.Close()
	if _, err := created.Receive(ctx); err != nil {
		t.Fatalf("fanout SUBSCRIBE to the channel of post creations: %v", err)
	}
	must(t, writer.Publish(ctx, keys.Created(), "42").Err())
	if got, err := fanout.Get(ctx, keys.Count("42")).Result(); err != nil || got != "1" {
		t.Fatalf("fanout GET count = %q, %v; want 1", got, err)
	}
	must(t, fanout.MGet(ctx, keys.Count("42"), keys.Version("42")).Err())
	must(t, fanout.HGetAll(ctx, keys.Reactions("42")).Err())
	must(t, fanout.IncrBy(ctx, keys.Watching("42", 7), 3).Err())
	must(t, fanout.PExpire(ctx, keys.Watching("42", 7), time.Minute).Err())
	refused(t, "fanout GET session key", fanout.Get(ctx, sessionKey).Err())
	refused(t, "fanout like script", fanout.Eval(ctx, likeScript, []string{keys.Count("42"), keys.Channel("42")}, "1").Err())
	refused(t, "fanout EVALSHA", fanout.EvalSha(ctx, "0123456789012345678901234567890123456789", []string{keys.Count("42")}).Err())
	refused(t, "fanout SET count", fanout.Set(ctx, keys.Count("42"), "1000000", 0).Err())
	refused(t, "fanout INCR count", fanout.Incr(ctx, keys.Count("42")).Err())
	refused(t, "fanout PUBLISH", fanout.Publish(ctx, keys.Channel("42"), "forged").Err())
	refused(t, "fanout PUBLISH a creation", fanout.Publish(ctx, keys.Created(), "forged").Err())
	refused(t, "fanout SET session key", fanout.Set(ctx, keys.SessionKey("forged"), "x", 0).Err())

	monitor := acl.Client(t, srv, redisacl.Monitor)
	must(t, monitor.Info(ctx, "cpu").Err())
	must(t, monitor.PubSubNumSub(ctx, keys.Channel("42")).Err())
	refused(t, "monitor GET count", monitor.Get(ctx, keys.Count("42")).Err())
	refused(t, "monitor GET session key", monitor.Get(ctx, sessionKey).Err())

	replica := acl.Client(t, srv, redisacl.Replica)
	refused(t, "replica GET session key", replica.Get(ctx, sessionKey).Err())

	nobody := acl.Client(t, srv, "")
	for name, err := range map[string]error{
		"PING":            nobody.Ping(ctx).Err(),
		"GET session key": nobody.Get(ctx, sessionKey).Err(),
		"like script":     nobody.Eval(ctx, likeScript, []string{keys.Count("42"), keys.Channel("42")}, "1").Err(),
	} {
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("no credentials, %s: %v; want NOAUTH", name, err)
		}
	}
	wrong := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: redisacl.Writer, Password: acl.Passwords[redisacl.Fanout], MaxRetries: -1})
	defer wrong.Close()
	if err := wrong.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("the writer's name with fanout's password: %v; want WRONGPASS", err)
	}
	if got, err := writer.Get(ctx, keys.Count("42")).Result(); err != nil || got != "1" {
		t.Errorf("after every refused write the count is %q (%v); want 1", got, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// refused fails the test unless err is Redis's NOPERM: refused for want of permission, not for
// any other reason.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("%s: %v; want NOPERM", what, err)
	}
}

// TestFileRefusesAPrefixThatGrantsMore: a prefix with a glob character would grant other keys.
func TestFileRefusesAPrefixThatGrantsMore(t *testing.T) {
	for _, p := range []string{"", "*", "likes:*", "a b", "l{x}"} {
		if _, err := redisacl.DataNodes(p, redisacl.NewPasswords()); err == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
	short := redisacl.NewPasswords()
	short[redisacl.Fanout] = "short"
	if _, err := redisacl.DataNodes("likes:", short); err == nil {
		t.Error("a 5-byte password accepted")
	}
}

// TestSentinelPrivileges: the Sentinels require the same users. A service finds the primary
// through them with its own credentials, but cannot reconfigure them; with no credentials a
// Sentinel answers nothing; and the Sentinel itself, as the Sentinel user, sees the primary up.
func TestSentinelPrivileges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl := redistest.NewACL(t, "likes:")
	primary := acl.Start(t)
	sn := acl.StartSentinel(t, primary)
	client := func(user string) *redis.SentinelClient {
		opt := &redis.Options{Addr: sn.Addr, MaxRetries: -1}
		if user != "" {
			opt.Username, opt.Password = user, acl.Passwords[user]
		}
		c := redis.NewSentinelClient(opt)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for _, u := range []string{redisacl.Writer, redisacl.Fanout, redisacl.Monitor} {
		addr, err := client(u).GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil || len(addr) != 2 || addr[1] != strings.Split(primary.Addr, ":")[1] {
			t.Errorf("%s asks the Sentinel for the primary: %v, %v; want %s", u, addr, err, primary.Addr)
		}
		if _, err := client(u).Replicas(ctx, "mymaster").Result(); err != nil {
			t.Errorf("%s asks the Sentinel for the replicas: %v", u, err)
		}
		refused(t, u+" SENTINEL SET", client(u).Set(ctx, "mymaster", "quorum", "2").Err())
		refused(t, u+" SENTINEL FAILOVER", client(u).Failover(ctx, "mymaster").Err())
	}
	// The writer reads the primary's entry (its run id: REDIS_ACK_REPLICAS=all); fanout may not.
	if err := client(redisacl.Writer).Master(ctx, "mymaster").Err(); err != nil {
		t.Errorf("the writer reads the primary's entry: %v", err)
	}
	refused(t, "fanout SENTINEL MASTER", client(redisacl.Fanout).Master(ctx, "mymaster").Err())
	if err := client("").GetMasterAddrByName(ctx, "mymaster").Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("no credentials: %v; want NOAUTH", err)
	}
	// The Sentinel logs in to the primary as the Sentinel user: it has read the primary's INFO
	// (the run id comes from it; a refused login leaves it empty).
	err := poll.For(10*time.Second, func() error {
		m, err := client(redisacl.Sentinel).Master(ctx, "mymaster").Result()
		if err != nil {
			return err
		}
		if m["flags"] != "master" || m["runid"] == "" {
			return fmt.Errorf("the Sentinel's view of the primary: flags %q, run id %q", m["flags"], m["runid"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAppendOnlyFileReloadsUnderTheACL: a data node restarted on its append-only file keeps what
// scripts wrote. Redis 7.0 replays the file as the default user and checks each MULTI/EXEC block
// (a script's writes) against that user's rules: with the default user off, every like stored
// by a script was dropped at the next start (seen in the Compose suite: acknowledged likes lost
// after every data node was killed and started).
func TestAppendOnlyFileReloadsUnderTheACL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl := redistest.NewACL(t, "likes:")
	srv := acl.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	keys := rediskeys.New("likes:")
	writer := acl.Client(t, srv, redisacl.Writer)
	script := `redis.call('INCR', KEYS[1]); redis.call('SET', KEYS[2], ARGV[1]); return 1`
	for i := range 3 {
		must(t, writer.Eval(ctx, script, []string{keys.Count("42"), keys.Version("42")}, i).Err())
	}
	srv.Restart()
	err := poll.For(10*time.Second, func() error {
		got, err := writer.Get(ctx, keys.Count("42")).Result()
		if err != nil {
			return err
		}
		if got != "3" {
			return fmt.Errorf("count %q after the restart; want 3", got)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the scripts' writes after a restart on the append-only file: %v\n%s", err, strings.Join(srv.LogTail(), "\n"))
	}
}

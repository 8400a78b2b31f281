package partitiontest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/likehistory"
	"github.com/likes/likes/testkit/netnstest"
	"github.com/likes/likes/testkit/poll"
)

// The settings docker-compose.yml's x-redis-node and deploy/redis/likes-redis.sh's Sentinels ship
// (down-after 1.5 s, failover-timeout 2 s: the compose file says why; TestSentinelTiming holds
// them to it).
var nodeArgs = []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
	"--min-replicas-to-write", "1", "--min-replicas-max-lag", "2", "--repl-diskless-sync-delay", "0",
	"--protected-mode", "no", "--bind", "0.0.0.0"}

const (
	master      = "mymaster"
	sentinelCfg = "sentinel monitor %s %s 6379 2\n" +
		"sentinel down-after-milliseconds %[1]s 1500\n" +
		"sentinel failover-timeout %[1]s 2000\n" +
		"sentinel parallel-syncs %[1]s 1\n"
	// writerTimeout is the writer's REQUEST_TIMEOUT (its default); the clients wait longer, so
	// that a 503 the writer sends at its deadline is seen as a Fail, not an Unknown.
	writerTimeout = 2 * time.Second
)

// cluster is the topology of one test: every process a host of its own.
type cluster struct {
	t         *testing.T
	net       *netnstest.Net
	data      [3]*netnstest.Host // redis-0 starts as the primary
	sentinels [3]*netnstest.Host
	writer    *netnstest.Host
	fanouts   [2]*netnstest.Host // fanout-svc nodes, their viewers the test's (viewers_test.go)
	client    likehistory.Client
	dir       string
	procs     map[*netnstest.Host]*proc // the one process of each host
}

var (
	buildMu sync.Mutex
	built   = map[string]error{} // binary -> the build's outcome
)

// buildWriter builds writer-svc once per dir, into dir: a test passes a directory of its own
// (t.TempDir), which goes when that test ends, and its subtests share the binary.
func buildWriter(dir string) (string, error) { return build(dir, "writer-svc") }

// build builds the module's command name once per dir, into dir. LIKES_PARTITION_BIN_DIR, when
// set, names a directory of binaries built already, used instead: the old writer and fanout of a
// worktree, to show that a check fails on them.
func build(dir, name string) (string, error) {
	if pre := os.Getenv("LIKES_PARTITION_BIN_DIR"); pre != "" {
		bin := filepath.Join(pre, name)
		_, err := os.Stat(bin)
		return bin, err
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	bin := filepath.Join(dir, name)
	if err, ok := built[bin]; ok {
		return bin, err
	}
	var err error
	if out, e := exec.Command("go", "build", "-o", bin, "github.com/likes/likes/"+name).CombinedOutput(); e != nil {
		err = fmt.Errorf("go build %s: %w: %s", name, e, out)
	}
	built[bin] = err
	return bin, err
}

// startCluster starts the data nodes, the Sentinels, a writer and two fanout nodes, and waits
// until the writer acknowledges a like (with a replica's confirmation).
func startCluster(t *testing.T, binDir string) *cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server: %v (apt-get install redis-server)", err)
	}
	bin, err := buildWriter(binDir)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, net: netnstest.New(t), dir: t.TempDir(), procs: map[*netnstest.Host]*proc{}}
	for i := range c.data {
		c.data[i] = c.net.Host(fmt.Sprintf("redis-%d", i))
	}
	for i := range c.sentinels {
		c.sentinels[i] = c.net.Host(fmt.Sprintf("sentinel-%d", i))
	}
	c.writer = c.net.Host("writer")
	primary := c.data[0].Addr.String()
	for i, h := range c.data {
		dir := filepath.Join(c.dir, h.Name)
		c.mountDisk(dir)
		of := ""
		if i > 0 {
			of = primary
		}
		c.start(h, dir, nil, "redis-server", dataArgs(h, dir, of)...)
	}
	poll.Check(t, 20*time.Second, func() error { return c.linked(c.data[0]) })
	var addrs []string
	for _, h := range c.sentinels {
		dir := filepath.Join(c.dir, h.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "sentinel.conf")
		text := "port 26379\nbind 0.0.0.0\nprotected-mode no\ndir " + dir + "\nsentinel announce-ip " + h.Addr.String() + "\n" +
			fmt.Sprintf(sentinelCfg, master, primary)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c.start(h, dir, nil, "redis-server", conf, "--sentinel")
		addrs = append(addrs, h.HostPort(26379))
	}
	poll.Check(t, 30*time.Second, c.sentinelsKnowAll)
	listen := c.writer.HostPort(8080)
	c.start(c.writer, filepath.Join(c.dir, "writer"), []string{
		"REDIS_SENTINEL_ADDRS=" + strings.Join(addrs, ","), "REDIS_SENTINEL_MASTER=" + master,
		"REDIS_ACK_REPLICAS=" + ackReplicas(false), "TRUST_USER_HEADER=true", "LISTEN_ADDR=" + listen,
		"LIKE_ADDR_RATE=off", "READ_ADDR_RATE=off", "NEW_POST_RATE=off", "NEW_POST_ADDR_RATE=off",
	}, bin)
	c.client = likehistory.Client{URL: "http://" + listen, HTTP: &http.Client{Timeout: writerTimeout + 2*time.Second}}
	c.startFanouts(binDir, addrs)
	c.settle()
	return c
}

// start runs name in h until the test ends; its output goes to a log file beside dir, which the
// test prints when it fails (logPath). The process is kept as h's, so that a nemesis can pause, kill and
// restart it (process.go).
func (c *cluster) start(h *netnstest.Host, dir string, env []string, name string, args ...string) {
	c.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	p := &proc{host: h, dir: dir, env: env, name: name, args: args}
	c.procs[h] = p
	c.launch(p)
	c.t.Cleanup(func() {
		p.kill()
		if c.t.Failed() {
			if out, err := os.ReadFile(logPath(dir)); err == nil {
				c.t.Logf("%s (%s) log, last lines:\n%s", h.Name, name, tail(string(out), 15))
			}
		}
	})
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// redisDo runs one command on addr with a short deadline and a connection of its own.
func redisDo(addr string, args ...any) (any, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return rdb.Do(ctx, args...).Result()
}

// info returns one field of INFO replication on h.
func info(h *netnstest.Host, field string) (string, error) {
	v, err := redisDo(h.HostPort(6379), "info", "replication")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(fmt.Sprint(v), "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && k == field {
			return val, nil
		}
	}
	return "", fmt.Errorf("%s: no %s in INFO replication", h.Name, field)
}

// linked is nil when p is a primary with both other data nodes connected and in sync.
func (c *cluster) linked(p *netnstest.Host) error {
	role, err := info(p, "role")
	if err != nil {
		return err
	}
	if role != "master" {
		return fmt.Errorf("%s is a %s", p.Name, role)
	}
	for _, h := range c.data {
		if h == p {
			continue
		}
		if r, err := info(h, "role"); err != nil || r != "slave" {
			return fmt.Errorf("%s: role %q, %w", h.Name, r, err)
		}
		if up, err := info(h, "master_link_status"); err != nil || up != "up" {
			return fmt.Errorf("%s: link %q, %w", h.Name, up, err)
		}
		if host, err := info(h, "master_host"); err != nil || host != p.Addr.String() {
			return fmt.Errorf("%s replicates %q, not %s", h.Name, host, p.Name)
		}
	}
	return nil
}

// sentinelsKnowAll is nil when every Sentinel names the same primary and knows two replicas
// and the two other Sentinels.
func (c *cluster) sentinelsKnowAll() error {
	var named string
	for _, s := range c.sentinels {
		v, err := redisDo(s.HostPort(26379), "sentinel", "get-master-addr-by-name", master)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		addr := fmt.Sprint(v)
		if named != "" && addr != named {
			return fmt.Errorf("%s names %s, another %s", s.Name, addr, named)
		}
		named = addr
		for _, what := range []string{"replicas", "sentinels"} {
			v, err := redisDo(s.HostPort(26379), "sentinel", what, master)
			if err != nil {
				return fmt.Errorf("%s: sentinel %s: %w", s.Name, what, err)
			}
			if l, _ := v.([]any); len(l) != 2 {
				return fmt.Errorf("%s knows %d %s", s.Name, len(l), what)
			}
		}
	}
	return nil
}

// primary is the one data node the Sentinels name, once it is a primary with both replicas
// linked.
func (c *cluster) primary() (*netnstest.Host, error) {
	v, err := redisDo(c.sentinels[0].HostPort(26379), "sentinel", "get-master-addr-by-name", master)
	if err != nil {
		return nil, err
	}
	l, _ := v.([]any)
	if len(l) != 2 {
		return nil, fmt.Errorf("sentinel answered %v", v)
	}
	for _, h := range c.data {
		if h.Addr.String() == fmt.Sprint(l[0]) {
			return h, c.linked(h)
		}
	}
	return nil, fmt.Errorf("sentinel names %v, no data node", l[0])
}

// settle waits until the cluster is whole again: the Sentinels agree on one primary, both
// replicas are linked to it, and the writer acknowledges a like.
func (c *cluster) settle() time.Duration {
	c.t.Helper()
	start := time.Now()
	poll.Check(c.t, 60*time.Second, func() error {
		if err := c.sentinelsKnowAll(); err != nil {
			return err
		}
		if _, err := c.primary(); err != nil {
			return err
		}
		op := c.client.Change(likehistory.NewRecorder(), 0, likehistory.Like, "settle", "probe")
		if op.Outcome != likehistory.OK {
			return errors.New("the writer does not acknowledge a like yet")
		}
		return nil
	})
	return time.Since(start)
}

// ackReplicas is the writer's REDIS_ACK_REPLICAS: LIKES_NEMESIS_ACK_REPLICAS, or when unset what
// the deployment ships, "all" with Sentinel and 1 on a Cluster (where "all" is not offered), so
// that the table's other columns can be measured.
func ackReplicas(cluster bool) string {
	if n := os.Getenv("LIKES_NEMESIS_ACK_REPLICAS"); n != "" && (n != "all" || !cluster) {
		return n
	}
	if cluster {
		return "1"
	}
	return "all"
}

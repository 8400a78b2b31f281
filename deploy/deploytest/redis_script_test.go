package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/redistest"
)

// scriptRun is what one run of likes-redis.sh handed to the image's entrypoint, and how long it
// took to get there.
type scriptRun struct {
	args   []string // the entrypoint's arguments: redis-server and its options
	stderr string
	took   time.Duration
}

// runRedisScript runs deploy/redis/likes-redis.sh with sh (dash here, as in the Debian stand-in
// image) and only env set, as the containers run it, with a docker-entrypoint.sh on PATH that
// prints its arguments instead of starting Redis, and, when the last is "-" (configuration on
// standard input), a line "<stdin>" and what it was given there.
func runRedisScript(t *testing.T, env map[string]string, args ...string) scriptRun {
	t.Helper()
	bin := t.TempDir()
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; last=$a; done\n" +
		"if [ \"$last\" = - ]; then echo '<stdin>'; cat; fi\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-entrypoint.sh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{redisScript}, args...)...)
	cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("likes-redis.sh %v: %v\n%s", args, err, stderr.String())
	}
	return scriptRun{args: strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n"), stderr: stderr.String(), took: time.Since(start)}
}

// closedAddrs returns n loopback addresses where nothing listens: Sentinels that do not answer.
func closedAddrs(t *testing.T, n int) string {
	var addrs []string
	for range n {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(freeport.Port(t)))
	}
	return strings.Join(addrs, ",")
}

// TestRedisScriptSyntax: the script parses as POSIX sh.
func TestRedisScriptSyntax(t *testing.T) {
	if out, err := exec.Command("sh", "-n", redisScript).CombinedOutput(); err != nil {
		t.Fatalf("sh -n likes-redis.sh: %v\n%s", err, out)
	}
}

// TestRedisScriptNodeRole: a data node starts as the primary or as its replica: the primary the
// Sentinels name when one answers (a node restarted after a failover follows the new primary),
// else REDIS_INITIAL_PRIMARY. It announces its name, and passes its options on unchanged.
func TestRedisScriptNodeRole(t *testing.T) {
	sn := redistest.StartSentinel(t, 1)
	primary := sn.Primary()
	host, port, _ := strings.Cut(primary.Addr, ":")
	opts := []string{"--appendonly", "yes", "--save", ""}
	tests := []struct {
		name      string
		sentinels string
		node      string
		want      []string // after redis-server and opts
	}{
		{"no sentinel answers, the initial primary", closedAddrs(t, 3), "redis-0",
			[]string{"--port", "6379", "--replica-announce-ip", "redis-0"}},
		{"no sentinel answers, a replica of the initial primary", closedAddrs(t, 3), "redis-1",
			[]string{"--port", "6379", "--replica-announce-ip", "redis-1", "--replicaof", "redis-0", "6379"}},
		{"a sentinel names another primary", closedAddrs(t, 1) + "," + sn.AddrList(), "redis-0",
			[]string{"--port", "6379", "--replica-announce-ip", "redis-0", "--replicaof", host, port}},
		{"a sentinel names this node", sn.AddrList(), host,
			[]string{"--port", "6379", "--replica-announce-ip", host}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := runRedisScript(t, map[string]string{
				"REDIS_NODE": tt.node, "REDIS_INITIAL_PRIMARY": "redis-0", "REDIS_SENTINEL_ADDRS": tt.sentinels,
				"REDIS_SENTINEL_MASTER": sn.Master, "REDIS_PRIMARY_WAIT": "0",
			}, append([]string{"node"}, opts...)...)
			want := append(append([]string{"redis-server"}, opts...), tt.want...)
			if !slices.Equal(run.args, want) {
				t.Errorf("got %q; want %q (stderr: %s)", run.args, want, run.stderr)
			}
		})
	}
}

// TestRedisScriptReplicaWaitsForPrimary: a replica starts at once when its primary answers, and
// after REDIS_PRIMARY_WAIT when it does not (it may be gone for good), saying so.
func TestRedisScriptReplicaWaitsForPrimary(t *testing.T) {
	sn := redistest.StartSentinel(t, 1)
	env := map[string]string{"REDIS_NODE": "redis-9", "REDIS_INITIAL_PRIMARY": "redis-0",
		"REDIS_SENTINEL_ADDRS": sn.AddrList(), "REDIS_SENTINEL_MASTER": sn.Master, "REDIS_PRIMARY_WAIT": "2"}
	if run := runRedisScript(t, env, "node"); run.took > time.Second || strings.Contains(run.stderr, "did not answer") {
		t.Errorf("with the primary up: started after %v, stderr %q; want at once", run.took, run.stderr)
	}
	// No Sentinel answers, and the initial primary's name resolves to nothing.
	env["REDIS_SENTINEL_ADDRS"], env["REDIS_INITIAL_PRIMARY"] = closedAddrs(t, 3), "primary.invalid"
	run := runRedisScript(t, env, "node")
	// The script counts whole seconds of the clock: 2 s is 1 to 2 s.
	if run.took < time.Second || !strings.Contains(run.stderr, "did not answer within 2s") {
		t.Errorf("with the primary down: started after %v, stderr %q; want after 1-2s, saying why", run.took, run.stderr)
	}
	if !slices.Contains(run.args, "--replicaof") {
		t.Errorf("with the primary down: %q; want it started as its replica anyway", run.args)
	}
}

// TestRedisScriptSentinelConfig: a Sentinel's first start writes its configuration (hostnames
// resolved and announced, an id derived from its name, the monitored primary and the timing
// from the environment, docker-compose.yml's when it has none), which redis-server accepts; a
// later start keeps the file Sentinel has rewritten since, but for a timing the environment
// changed.
func TestRedisScriptSentinelConfig(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	env := map[string]string{"SENTINEL_NAME": "sentinel-1", "REDIS_INITIAL_PRIMARY": "127.0.0.1",
		"REDIS_SENTINEL_ADDRS": "sentinel-1:1," + closedAddrs(t, 2), "REDIS_SENTINEL_MASTER": "likes",
		"SENTINEL_QUORUM": "2", "SENTINEL_DOWN_AFTER_MS": "1800", "SENTINEL_FAILOVER_TIMEOUT_MS": "3000", "SENTINEL_CONF": conf}
	run := runRedisScript(t, env, "sentinel")
	if want := []string{"redis-server", conf, "--sentinel"}; !slices.Equal(run.args, want) {
		t.Errorf("entrypoint got %q; want %q", run.args, want)
	}
	raw, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	id := sha1.Sum([]byte("sentinel-1"))
	for _, want := range []string{
		"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes", "sentinel announce-ip sentinel-1",
		"sentinel myid " + hex.EncodeToString(id[:]), "sentinel monitor likes 127.0.0.1 6379 2",
		"sentinel down-after-milliseconds likes 1800", "sentinel failover-timeout likes 3000",
	} {
		if !slices.Contains(strings.Split(string(raw), "\n"), want) {
			t.Errorf("sentinel.conf lacks %q:\n%s", want, raw)
		}
	}
	checkSentinelStarts(t, conf)
	rewritten := append(slices.Clip(raw), "# rewritten by Sentinel\n"...)
	if err := os.WriteFile(conf, rewritten, 0o600); err != nil {
		t.Fatal(err)
	}
	runRedisScript(t, env, "sentinel")
	if got, _ := os.ReadFile(conf); !bytes.Equal(got, rewritten) {
		t.Errorf("a later start rewrote sentinel.conf:\n%s", got)
	}

	// A file from before a change of the timing (compose keeps a Sentinel's /data when it
	// recreates the container) takes the environment's at the next start, and keeps the rest.
	before := strings.Replace(string(rewritten), "down-after-milliseconds likes 1800", "down-after-milliseconds likes 1000", 1)
	if err := os.WriteFile(conf, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	runRedisScript(t, env, "sentinel")
	raw, err = os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for _, want := range []string{"sentinel down-after-milliseconds likes 1800", "sentinel failover-timeout likes 3000",
		"sentinel myid " + hex.EncodeToString(id[:]), "# rewritten by Sentinel"} {
		if n := strings.Count(string(raw), want+"\n"); n != 1 || !slices.Contains(lines, want) {
			t.Errorf("after a start on a file with down-after 1000, sentinel.conf has %q %d times; want once:\n%s", want, n, raw)
		}
	}
	if slices.Contains(lines, "sentinel down-after-milliseconds likes 1000") {
		t.Errorf("a later start kept the old down-after:\n%s", raw)
	}
	checkSentinelStarts(t, conf)

	// Without the timing in its environment the script writes docker-compose.yml's, which the
	// other deployments are held to: a Sentinel started by hand runs as tested.
	compose := composeRedisOf(t, loadCompose(t)).sentinels[0]
	env["SENTINEL_CONF"] = filepath.Join(t.TempDir(), "sentinel.conf")
	delete(env, "SENTINEL_DOWN_AFTER_MS")
	delete(env, "SENTINEL_FAILOVER_TIMEOUT_MS")
	runRedisScript(t, env, "sentinel")
	raw, err = os.ReadFile(env["SENTINEL_CONF"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sentinel down-after-milliseconds likes " + serviceEnv(compose, "SENTINEL_DOWN_AFTER_MS"),
		"sentinel failover-timeout likes " + serviceEnv(compose, "SENTINEL_FAILOVER_TIMEOUT_MS"),
	} {
		if !slices.Contains(strings.Split(string(raw), "\n"), want) {
			t.Errorf("with no timing in its environment sentinel.conf lacks %q (docker-compose.yml's):\n%s", want, raw)
		}
	}
}

// checkSentinelStarts runs redis-server in Sentinel mode on a copy of conf, on a free port, until
// it reports the primary it monitors: the file the script writes is one Redis accepts.
func checkSentinelStarts(t *testing.T, conf string) {
	t.Helper()
	raw, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text := strings.ReplaceAll(string(raw), "dir "+filepath.Dir(conf), "dir "+dir)
	copyConf := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(copyConf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// The context kills the process at the end, or after 10 s, which ends the scan below.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "redis-server", copyConf, "--sentinel", "--port", strconv.Itoa(freeport.Port(t)), "--bind", "127.0.0.1")
	cmd.Stderr = cmd.Stdout
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server --sentinel: %v", err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	var seen []string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if strings.Contains(sc.Text(), "+monitor master likes 127.0.0.1 6379") {
			return
		}
		seen = append(seen, sc.Text())
	}
	t.Fatalf("redis-server --sentinel did not start on the script's configuration:\n%s", strings.Join(seen, "\n"))
}

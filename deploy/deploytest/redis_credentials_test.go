package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRedisScriptCredentials: with REDIS_CREDENTIALS (a directory `credentials files` made, as
// docker-compose.yml mounts it), a data node gets its ACL file and its primary's credentials on
// standard input, never on its command line, which any process can read; a Sentinel's file gets
// its ACL file and the Sentinel user's credentials, replaced rather than added to at every
// start, and redis-server accepts the file.
func TestRedisScriptCredentials(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command(buildProgram(t, "credentials"), "files", "-dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("credentials files: %v\n%s", err, out)
	}
	secret := func(path string) string {
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}

	run := runRedisScript(t, map[string]string{
		"REDIS_CREDENTIALS": filepath.Join(dir, "redis"), "REDIS_NODE": "redis-1", "REDIS_INITIAL_PRIMARY": "redis-0",
		"REDIS_SENTINEL_ADDRS": closedAddrs(t, 3), "REDIS_PRIMARY_WAIT": "0",
	}, "node", "--appendonly", "yes")
	i := slices.Index(run.args, "<stdin>")
	if i < 1 || run.args[i-1] != "-" {
		t.Fatalf("entrypoint got %q; want the options, then \"-\" and the configuration on standard input", run.args)
	}
	args, stdin := run.args[:i], run.args[i+1:]
	replicaPW := secret("redis/replica.password")
	if strings.Contains(strings.Join(args, " "), replicaPW) {
		t.Errorf("the replica password is on redis-server's command line: %q", args)
	}
	if !slices.Contains(args, "--protected-mode") || args[slices.Index(args, "--protected-mode")+1] != "yes" {
		t.Errorf("the data node's options %q do not turn protected mode on", args)
	}
	for _, want := range []string{
		"aclfile " + filepath.Join(dir, "redis", "redis-users.acl"), "masteruser replica", "masterauth " + replicaPW,
	} {
		if !slices.Contains(stdin, want) {
			t.Errorf("the data node's configuration lacks %q: %q", want, stdin)
		}
	}

	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	env := map[string]string{"REDIS_CREDENTIALS": filepath.Join(dir, "sentinel"), "SENTINEL_NAME": "sentinel-1",
		"REDIS_INITIAL_PRIMARY": "127.0.0.1", "REDIS_SENTINEL_ADDRS": closedAddrs(t, 3), "REDIS_SENTINEL_MASTER": "likes",
		"SENTINEL_CONF": conf}
	runRedisScript(t, env, "sentinel")
	if run := runRedisScript(t, env, "sentinel"); !slices.Equal(run.args, []string{"redis-server", conf, "--sentinel", "--protected-mode", "yes"}) {
		t.Errorf("the Sentinel's entrypoint got %q; want its file, --sentinel and protected mode on", run.args)
	}
	raw, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	sentinelPW := secret("sentinel/sentinel.password")
	for _, want := range []string{
		"aclfile " + filepath.Join(dir, "sentinel", "sentinel-users.acl"), "protected-mode yes",
		"sentinel auth-user likes sentinel", "sentinel auth-pass likes " + sentinelPW,
		"sentinel sentinel-user sentinel", "sentinel sentinel-pass " + sentinelPW,
	} {
		if n := count(lines, want); n != 1 {
			t.Errorf("after two starts sentinel.conf has %q %d times; want once:\n%s", want, n, raw)
		}
	}
	if slices.Contains(lines, "protected-mode no") {
		t.Errorf("sentinel.conf still turns protected mode off:\n%s", raw)
	}
	checkSentinelStarts(t, conf)
}

func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/freeport"
)

// TestRunScript runs scripts/run.sh (the target of `make run`) on free ports, uses the curl
// examples it prints, and stops it the way a person does, with Ctrl-C to its process group.
func TestRunScript(t *testing.T) {
	for _, tool := range []string{"redis-server", "redis-cli", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: apt-get install -y redis-server redis-tools curl", tool)
		}
	}
	buildProgram(t, "writer-svc")
	buildProgram(t, "fanout-svc")
	writerPort, fanoutPort, redisPort := freeport.Port(t), freeport.Pair(t), freeport.Port(t)
	runDir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "run.sh"))
	cmd.Env = append(os.Environ(), "BIN="+binDir, "RUN_DIR="+runDir, "APPENDFSYNC=always", "LOG_LEVEL=warn",
		"WRITER_PORT="+strconv.Itoa(writerPort), "FANOUT_PORT="+strconv.Itoa(fanoutPort),
		"REDIS_PORT="+strconv.Itoa(redisPort), "REDIS_URL=", "DRAIN_WINDOW=1s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, like a terminal job
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() { // a failed test must not leave the deployment running
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	banner := readBanner(t, stdout)
	go func() { // drains stdout, then reports the script's exit; ends when the script does
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	if !strings.Contains(banner, "\nlikes is running:") {
		t.Fatalf("no banner; stderr:\n%s", stderr.String())
	}
	checkRedisDurability(t, redisPort)
	checkPrintedExamples(t, banner)
	interruptAndWait(t, cmd, exited, &stderr)
	for _, port := range []int{writerPort, fanoutPort, fanoutPort + 1, redisPort} {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still accepts connections after Ctrl-C", port)
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("processes of the run.sh group remain after it exited (kill -0: %v)", err)
	}
	if entries, err := os.ReadDir(filepath.Join(runDir, "redis", "appendonlydir")); err != nil || len(entries) == 0 {
		t.Errorf("no append-only file under %s/redis: %v", runDir, err)
	}
}

// readBanner reads the script's stdout up to the "Ctrl-C" line that ends its banner, within 90 s
// (building nothing, it needs a few seconds; the bound covers a loaded machine).
func readBanner(t *testing.T, stdout io.Reader) string {
	t.Helper()
	lines := make(chan string)
	go func() { // ends at the banner's last line or at EOF
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
			if strings.HasPrefix(sc.Text(), "Ctrl-C") {
				return
			}
		}
	}()
	var b strings.Builder
	timeout := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return b.String()
			}
			b.WriteString(l + "\n")
		case <-timeout:
			t.Fatalf("run.sh printed no complete banner within 90s; so far:\n%s", b.String())
		}
	}
}

// checkRedisDurability asserts the Redis that run.sh started keeps an fsync-always AOF, as
// APPENDFSYNC=always asked.
func checkRedisDurability(t *testing.T, port int) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for key, want := range map[string]string{"appendonly": "yes", "appendfsync": "always"} {
		got, err := rdb.ConfigGet(ctx, key).Result()
		if err != nil || got[key] != want {
			t.Errorf("redis CONFIG GET %s = %v (%v); want %s", key, got, err, want)
		}
	}
}

var (
	sseExample     = regexp.MustCompile(`(?m)^\s+curl -N (http://\S+/sse/42)$`)
	sessionExample = regexp.MustCompile(`(?m)^\s+([A-Z])=(\$\(curl .+\))$`)
	curlExample    = regexp.MustCompile(`(?m)^\s+(curl (?:-X \S+\s+-H "[^"]+"\s+)?http://\S+)$`)
)

// checkPrintedExamples opens the printed SSE examples for post 42, runs the printed curl lines in
// order, and checks their answers and that every stream sees the like.
func checkPrintedExamples(t *testing.T, banner string) {
	t.Helper()
	streams := sseExample.FindAllStringSubmatch(banner, -1)
	if len(streams) != 2 {
		t.Fatalf("banner has %d SSE examples for post 42; want one per fanout node:\n%s", len(streams), banner)
	}
	var viewers []*clienttest.Viewer
	for _, m := range streams {
		v := clienttest.Watch(t, m[1])
		viewers = append(viewers, v)
		awaitConnected(t, v, "42")
	}
	env := takePrintedSessions(t, banner)
	wantReplies := []string{`"count":1,"liked":true`, `"count":1,"liked":false`, `"post_id":"43","count":1,"liked":true`, `"count":0,"liked":false`, `{"post_id":"42","count":0}`}
	examples := curlExample.FindAllStringSubmatch(banner, -1)
	if len(examples) != len(wantReplies) {
		t.Fatalf("banner has %d curl examples; want %d:\n%s", len(examples), len(wantReplies), banner)
	}
	for i, m := range examples {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, "sh", "-c", m[1]+" -sS --fail-with-body")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), wantReplies[i]) {
			t.Errorf("%s -> %s (%v); want it to contain %s", m[1], out, err, wantReplies[i])
		}
		if i == 0 {
			clienttest.WaitCount(t, 10*time.Second, "42", 1, viewers...)
		}
	}
}

// takePrintedSessions runs the banner's session lines (A=$(curl ... /session ...)), each once,
// and returns the environment that gives the curl examples their tokens.
func takePrintedSessions(t *testing.T, banner string) []string {
	t.Helper()
	lines := sessionExample.FindAllStringSubmatch(banner, -1)
	if len(lines) != 2 {
		t.Fatalf("banner has %d session lines; want 2 (two users):\n%s", len(lines), banner)
	}
	env := os.Environ()
	for _, m := range lines {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, "sh", "-c", "printf %s "+m[2]).Output()
		cancel()
		if err != nil || !regexp.MustCompile(`^[\w-]+\.[\w-]+\.[\w-]+$`).Match(out) {
			t.Fatalf("%s=%s -> %q (%v); want a token", m[1], m[2], out, err)
		}
		env = append(env, m[1]+"="+string(out))
	}
	return env
}

// interruptAndWait sends SIGINT to the script's process group, as Ctrl-C in a terminal does, and
// waits up to 45 s for it to exit. A process started with SIGINT ignored (some CI runners do that
// to background jobs) passes the ignore on to bash, which then cannot trap it; SIGTERM, which
// run.sh traps the same way, stands in there.
func interruptAndWait(t *testing.T, cmd *exec.Cmd, exited <-chan error, stderr *bytes.Buffer) {
	t.Helper()
	sig := syscall.SIGINT
	if sigintIgnored(t) {
		t.Log("SIGINT is ignored in this process and would be in run.sh: sending SIGTERM instead")
		sig = syscall.SIGTERM
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Logf("run.sh exited after %v: %v", sig, err)
	case <-time.After(45 * time.Second):
		t.Fatalf("run.sh did not stop within 45s of %v; stderr:\n%s", sig, stderr.String())
	}
	if !strings.Contains(stderr.String(), "run: stopped") {
		t.Errorf("run.sh did not report stopping; stderr:\n%s", stderr.String())
	}
}

// sigintIgnored reads this process's ignored-signal mask from /proc.
func sigintIgnored(t *testing.T) bool {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	m := regexp.MustCompile(`(?m)^SigIgn:\s+([0-9a-f]+)$`).FindSubmatch(status)
	if m == nil {
		return false
	}
	mask, err := strconv.ParseUint(string(m[1]), 16, 64)
	return err == nil && mask&(1<<(uint(syscall.SIGINT)-1)) != 0
}

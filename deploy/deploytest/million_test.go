package deploytest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/freeport"
)

// TestMillionScript runs scripts/million.sh (the million-viewer benchmark) at 2,000 viewers on
// two nodes with short windows, so that the script cannot rot between the runs at a million: once
// as the idle-cost run with ONE_LIKE=1 (the first post liked once at the end: its 100 viewers all
// get it) and WRITE_PROBE=200 (likes to unwatched posts, alone and beside the load phases: all
// acknowledged, the writer's CPU per like read), once with KILL_NODE=1 (one of the two nodes killed in the idle step, its
// 1,000 viewers moved to the other). Each table must count every viewer open and none failed,
// each run must be done within 90 s, and nothing it started may still listen afterwards.
func TestMillionScript(t *testing.T) {
	for _, tool := range []string{"redis-server", "redis-cli", "curl", "taskset", "setsid", "ss", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: apt-get install -y redis-server redis-tools curl util-linux iproute2", tool)
		}
	}
	for _, p := range []string{"writer-svc", "fanout-svc", "loadgen"} {
		buildProgram(t, p)
	}
	t.Run("idle", func(t *testing.T) {
		table := runMillion(t, "ONE_LIKE=1", "WRITE_PROBE=200")
		// Present; its value may be "-" when a node's scrape missed the window's edge on a busy CI.
		if _, ok := table["idle: nodes CPU % of a core"]; !ok {
			t.Errorf("no idle row in a run without KILL_NODE")
		}
		if _, ok := table["node loss: viewers moved"]; ok {
			t.Errorf("node loss rows in a run without KILL_NODE")
		}
		for row, want := range map[string]string{
			"one like: viewers of the post": "100", "one like: delivered": "100", "one like: viewers current (all posts)": "2000",
		} {
			if got := table[row]; got != want {
				t.Errorf("%s = %q, want %s", row, got, want)
			}
		}
		if got, err := strconv.ParseFloat(table["one like: ms until the last viewer had it"], 64); err != nil || got < 0 {
			t.Errorf("one like: ms until the last viewer had it = %q, want a number", table["one like: ms until the last viewer had it"])
		}
		for _, row := range []string{"write probe alone: likes/s", "20000 ev/s: write probe likes/s", "50000 ev/s: write probe likes/s"} {
			// 200 likes/s offered over a 2 s window: 200, give or take the window's edges.
			if got, err := strconv.ParseFloat(table[row], 64); err != nil || got < 180 || got > 220 {
				t.Errorf("%s = %q, want about 200", row, table[row])
			}
		}
		for _, row := range []string{"write probe alone: likes per writer CPU-s", "50000 ev/s: likes per writer CPU-s"} {
			if got, err := strconv.ParseFloat(table[row], 64); err != nil || got <= 0 {
				t.Errorf("%s = %q, want a positive number", row, table[row])
			}
		}
	})
	t.Run("node loss", func(t *testing.T) {
		// A 3 s window (the last WINDOW wins): 2.5 s after the kill for 1,000 reconnects on a busy CI.
		table := runMillion(t, "KILL_NODE=1", "KILL_AFTER=0.5s", "WINDOW=3s")
		// The lost node held every other viewer: all of them moved, and the other node took them.
		if got := table["node loss: viewers moved"]; got != "1000" {
			t.Errorf("node loss: viewers moved = %q, want 1000", got)
		}
		if got := table["node loss: admitted elsewhere"]; got != "1000" {
			t.Errorf("node loss: admitted elsewhere = %q, want 1000", got)
		}
		if got, err := strconv.ParseFloat(table["node loss: ms until every moved viewer current"], 64); err != nil || got <= 0 {
			t.Errorf("node loss: ms until every moved viewer current = %q, want a positive number",
				table["node loss: ms until every moved viewer current"])
		}
		if got := table["idle: nodes CPU % of a core"]; got != "-" {
			t.Errorf("idle: nodes CPU %% of a core = %q with a node lost in the idle step, want -", got)
		}
	})
}

// runMillion runs million.sh at 2,000 viewers on two nodes with env added, checks what every run
// must show (all viewers open, none failed, the generator's memory, nothing left listening), and
// returns its table.
func runMillion(t *testing.T, env ...string) map[string]string {
	t.Helper()
	base := rampPortBase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "scripts", "million.sh"))
	// On the deadline the script is asked to stop (its trap takes its ramp down), then killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	cmd.Env = append(os.Environ(), "BIN="+binDir, "MILLION_DIR="+t.TempDir(), "RAMP_PORT_BASE="+strconv.Itoa(base),
		"CONNS=2000", "POSTS=20", "NODES=2", "WARMUP=0.5s", "WINDOW=2s", "QUIET_WAIT=0",
		// A CI test, not a benchmark: it does not wait for a benchmark's lock.
		"LIKES_BENCH_LOCK_HELD=1")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("million.sh: %v after %v\nstdout:\n%s\nstderr:\n%s", err, time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	}
	table := tableFigures(stdout.String())
	if got := table["viewers open"]; got != "2000" {
		t.Errorf("viewers open = %q, want 2000\n%s", got, stdout.String())
	}
	if got := table["viewers failed"]; got != "0" {
		t.Errorf("viewers failed = %q, want 0\n%s", got, stdout.String())
	}
	// The generator's own memory comes from the ramp's CSV (its workers' figure): a number.
	if got, err := strconv.Atoi(table["loadgen memory per viewer B"]); err != nil || got <= 0 {
		t.Errorf("loadgen memory per viewer B = %q, want a positive number\n%s", table["loadgen memory per viewer B"], stdout.String())
	}
	for _, port := range []int{base + 80, base + 90, base + 91, base + 379} {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still accepts connections after million.sh exited", port)
		}
	}
	if t.Failed() {
		t.Logf("table:\n%s", stdout.String())
	}
	return table
}

// tableFigures reads million.sh's table: a figure's name, then a value per run (one run here).
func tableFigures(out string) map[string]string {
	figures := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		figures[strings.Join(fields[:len(fields)-1], " ")] = fields[len(fields)-1]
	}
	return figures
}

// rampPortBase returns a RAMP_PORT_BASE whose ports that scripts/ramp.sh uses with two nodes
// (writer +80, nodes +90 and +91, Redis +379) were free a moment ago.
func rampPortBase(t *testing.T) int {
	t.Helper()
	for range 50 {
		base := freeport.Port(t) - 80
		if base < 1024 || base+379 > 65535 {
			continue
		}
		free := true
		for _, off := range []int{90, 91, 379} {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off))
			if err != nil {
				free = false
				break
			}
			_ = ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no RAMP_PORT_BASE with its ports free in 50 tries")
	return 0
}

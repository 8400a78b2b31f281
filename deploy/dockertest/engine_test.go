package dockertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// repoRoot is the module root, two levels above this package.
var repoRoot = func() string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

// engine is what TestMain found: the docker CLI to use, or why the suite cannot run.
var engine struct {
	docker  string    // CLI that reaches the engine and has the Compose plugin
	skip    string    // non-empty: no engine, and the reason
	dockerd *exec.Cmd // the daemon this run started, stopped when it ends
}

func TestMain(m *testing.M) {
	if err := findEngine(); err != nil {
		engine.skip = err.Error()
		fmt.Fprintf(os.Stderr, "dockertest: SKIPPING the Docker suite: %s\n", engine.skip)
	}
	code := m.Run()
	stopDockerd()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "dockertest: goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// needEngine skips the test, loudly, when TestMain found no engine.
func needEngine(t *testing.T) {
	t.Helper()
	if engine.skip != "" {
		fmt.Fprintf(os.Stderr, "dockertest: %s SKIPPED: %s\n", t.Name(), engine.skip)
		t.Skip("no Docker engine: " + engine.skip)
	}
}

// cliCandidates are the docker CLIs tried in order: $DOCKER, Debian's (the engine's own
// version), then whatever is on PATH. A newer client negotiates the API version down and works
// with Engine 20.10 too; both reach the Compose plugin in ~/.docker/cli-plugins.
func cliCandidates() []string {
	var out []string
	for _, c := range []string{os.Getenv("DOCKER"), "/usr/bin/docker", "docker"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// findEngine picks a CLI that reaches an engine, starting dockerd when none answers and this
// process may. It fails when no engine can be had; a missing Compose plugin is no reason to
// skip (the test then fails and says how to install it).
func findEngine() error {
	clis := cliCandidates()
	if len(clis) == 0 {
		return errors.New("no docker CLI on this machine (apt-get install -y docker.io)")
	}
	if cli := answering(clis); cli != "" {
		engine.docker = cli
		return nil
	}
	if err := startDockerd(); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cli := answering(clis); cli != "" {
			engine.docker = cli
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	stopDockerd()
	return errors.New("started dockerd but no engine answered within 60s")
}

// answering returns the first CLI whose `docker info` reaches an engine.
func answering(clis []string) string {
	for _, c := range clis {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := exec.CommandContext(ctx, c, "info", "--format", "{{.ServerVersion}}").Run()
		cancel()
		if err == nil {
			return c
		}
	}
	return ""
}

// startDockerd starts the engine as .ci/run does, when this process is root and dockerd is
// installed.
func startDockerd() error {
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		return errors.New("no engine answers and dockerd is not installed (apt-get install -y docker.io)")
	}
	if os.Geteuid() != 0 {
		return errors.New("no engine answers and only root may start dockerd here")
	}
	log, err := os.CreateTemp("", "dockertest-dockerd-*.log")
	if err != nil {
		return err
	}
	cmd := exec.Command(bin)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start dockerd: %w", err)
	}
	log.Close()
	fmt.Fprintf(os.Stderr, "dockertest: no engine answered; started dockerd (pid %d, log %s)\n", cmd.Process.Pid, log.Name())
	engine.dockerd = cmd
	return nil
}

// stopDockerd stops the daemon startDockerd started: SIGTERM (it stops its containers), SIGKILL
// after 30 s.
func stopDockerd() {
	cmd := engine.dockerd
	if cmd == nil {
		return
	}
	engine.dockerd = nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // reaps dockerd; ends when it exits
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	fmt.Fprintln(os.Stderr, "dockertest: stopped the dockerd this run started")
}

// docker runs the CLI with a timeout and returns its combined output.
func docker(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, engine.docker, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, tailString(string(out), 4000))
	}
	return string(out), nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

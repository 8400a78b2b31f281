package contract

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
)

// service is one service process under fuzz: a built binary on a loopback port. A draw that
// leaves it hung or dead gets it restarted on the same address before the next draw, so that
// every draw meets a healthy process and a failure does not spill into the draws rapid runs
// while it shrinks the failing one.
type service struct {
	name string
	addr string // host:port
	url  string // http://host:port
	env  []string
	logs *tailBuffer

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
	baseRSS  int64         // bytes, measured once /healthz answered after the last start
	killedBy string        // why the watchdog killed the process, "" if it did not
	suspect  bool          // a draw timed out on it: restart before the next draw
	starts   int
}

// startService starts binary name (built by TestMain) with env on a free loopback port, waits
// for /healthz, and stops the process when the test ends.
func startService(t *testing.T, name string, env ...string) *service {
	t.Helper()
	addr := freeport.Addr(t)
	s := &service{name: name, addr: addr, url: "http://" + addr, logs: newTailBuffer(1 << 20),
		env: append(append(os.Environ(), "LISTEN_ADDR="+addr, "LOG_LEVEL=warn"), env...)}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop(5 * time.Second)
		if t.Failed() {
			t.Logf("%s logs (tail):\n%s", name, s.logs.Tail(8<<10))
		}
	})
	return s
}

// start runs the process and waits up to 15 s for /healthz to answer 200.
func (s *service) start() error {
	cmd := exec.Command(filepath.Join(binDir, s.name))
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() { // exits when the process exits: stop, kill or crash
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done, s.killedBy, s.suspect, s.baseRSS = cmd, done, "", false, 0
	s.starts++
	s.mu.Unlock()
	err := poll.For(15*time.Second, func() error {
		select {
		case <-done:
			return fmt.Errorf("%s exited at start:\n%s", s.name, s.logs.String())
		default:
		}
		resp, err := http.Get(s.url + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s /healthz: %d", s.name, resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		s.stop(time.Second)
		return fmt.Errorf("%s did not become healthy: %w", s.name, err)
	}
	rss, err := s.rss()
	s.mu.Lock()
	s.baseRSS = rss
	s.mu.Unlock()
	return err
}

// stop sends SIGTERM, waits up to grace, then kills; it waits for the process to be gone.
func (s *service) stop(grace time.Duration) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// kill ends the process with SIGKILL at once and records why (the watchdog's reason).
func (s *service) kill(reason string) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	if cmd != nil && s.killedBy == "" {
		s.killedBy = reason
	}
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// dumpGoroutines ends a hung process with SIGQUIT, on which the Go runtime prints every
// goroutine's stack, and writes its log with the dump to a file whose path it returns: where the
// process was stuck is what a hang's report needs. The service restarts before the next draw.
func (s *service) dumpGoroutines() string {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.suspect = true
	s.mu.Unlock()
	if cmd == nil {
		return ""
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	f, err := os.CreateTemp("", "likes-contract-"+s.name+"-*.log")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	_, _ = f.WriteString(s.logs.String())
	s.logs.Reset() // the dump is in the file: a failure's log tail shows what came after
	return f.Name()
}

// health says whether the process still runs: "" if it does, otherwise how it ended.
func (s *service) health() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return "stopped"
	}
	select {
	case <-s.done:
		if s.killedBy != "" {
			return "killed by the fuzzer's watchdog: " + s.killedBy
		}
		return "exited: " + s.cmd.ProcessState.String()
	default:
		return ""
	}
}

// markSuspect asks for a restart before the next draw: a request to it got no reply in time,
// so a handler may still be running (and growing) in there.
func (s *service) markSuspect() {
	s.mu.Lock()
	s.suspect = true
	s.mu.Unlock()
}

// ensureHealthy restarts the process if it died or is suspect.
func (s *service) ensureHealthy() error {
	s.mu.Lock()
	suspect := s.suspect
	s.mu.Unlock()
	if !suspect && s.health() == "" {
		return nil
	}
	s.stop(0)
	return s.start()
}

// base returns the RSS measured after the process's last start.
func (s *service) base() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseRSS
}

// pid returns the process id, 0 when none runs.
func (s *service) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// rss returns the process's resident set size from /proc/<pid>/status (VmRSS).
func (s *service) rss() (int64, error) {
	pid := s.pid()
	if pid == 0 {
		return 0, fmt.Errorf("%s is not running", s.name)
	}
	return procRSS(pid)
}

// procRSS reads VmRSS of pid in bytes.
func procRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// tailBuffer keeps the last max bytes written to it: a process's log, which a long fuzz run
// must not let grow in the test's own memory.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return b.Tail(b.max) }

// Tail returns the last n bytes written.
func (b *tailBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.Clone(b.buf[max(0, len(b.buf)-n):]))
}

// Reset drops what was written.
func (b *tailBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = b.buf[:0]
}

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/apicheck"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
)

// binDir holds the binaries built once by TestMain.
var binDir string

// TestMain builds the binaries once and runs the suite. Every reply a writer-svc or fanout-svc
// started by StartProcAt gives http.DefaultClient (and so http.Get) is validated against the
// service's OpenAPI document (testkit/apicheck), as testkit/clienttest's clients are.
func TestMain(m *testing.M) {
	http.DefaultClient.Transport = apicheck.Wrap(nil)
	dir, err := os.MkdirTemp("", "likes-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := 1
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func buildBinaries(dir string) error {
	var cmds []string
	for _, name := range []string{"writer-svc", "fanout-svc", "loadgen", "slotmove"} {
		if _, err := os.Stat(filepath.Join("..", name, "main.go")); err == nil {
			cmds = append(cmds, "./"+name)
		}
	}
	args := append([]string{"build", "-race", "-o", dir + "/"}, cmds...)
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// Bin returns the path of a built binary, failing the test when it was not built.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(binDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("binary %s was not built: %v", name, err)
	}
	return p
}

// Proc is one service process started by a test.
type Proc struct {
	Name string
	Addr string // host:port it listens on
	URL  string // http://host:port

	t    testing.TB
	bin  string
	env  []string
	logs *lockedBuffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartWriter starts writer-svc against redisURL; env entries (KEY=VALUE) are added, and win.
// It trusts X-User-ID (TRUST_USER_HEADER=true), since most tests name their users: a test of the
// default identity mode passes TRUST_USER_HEADER=false and takes sessions. Every test's client is
// one loopback address, so the per-address limits on likes and on reads of counts are off
// (LIKE_ADDR_RATE=off, READ_ADDR_RATE=off) unless a test sets them.
func StartWriter(t testing.TB, redisURL string, env ...string) *Proc {
	return StartProc(t, "writer-svc", append([]string{"REDIS_URL=" + redisURL, "TRUST_USER_HEADER=true", "LIKE_ADDR_RATE=off", "READ_ADDR_RATE=off", "NEW_POST_ADDR_RATE=off", "NEW_POST_RATE=off", "USER_DATA_ADDR_RATE=off", "SESSION_REFRESH_RATE=off"}, env...)...)
}

// StartFanout starts fanout-svc against redisURL; env entries (KEY=VALUE) are added.
func StartFanout(t testing.TB, redisURL string, env ...string) *Proc {
	return StartProc(t, "fanout-svc", append([]string{"REDIS_URL=" + redisURL, noViewerCap}, env...)...)
}

// noViewerCap turns off the per-address stream cap (MAX_VIEWERS_PER_IP, 5000 by default) of the
// nodes the suite starts: every viewer of the suite comes from 127.0.0.1, and the storm alone
// opens 15,000. A test of the cap sets its own value after it (the last one wins).
const noViewerCap = "MAX_VIEWERS_PER_IP=0"

// StartProc starts binary name on a free loopback port with env and waits until /healthz answers.
// The process is stopped (SIGTERM, then SIGKILL) when the test ends.
func StartProc(t testing.TB, name string, env ...string) *Proc {
	t.Helper()
	return StartProcAt(t, name, freeport.Addr(t), env...)
}

// StartProcAt is StartProc on a given address, for a test that must know it before the process
// starts (a page origin the writer has to allow).
func StartProcAt(t testing.TB, name, addr string, env ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Addr: addr, URL: "http://" + addr, t: t, bin: Bin(t, name), logs: &lockedBuffer{}}
	if spec := apicheck.ForService(name); spec != nil {
		apicheck.Serve(t, addr, spec) // its replies to the suite's clients must be as its document says
	}
	p.env = append(append(os.Environ(), "LISTEN_ADDR="+addr, "LOG_LEVEL=warn"), env...)
	p.start()
	t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("%s logs (tail):\n%s", name, p.logs.Tail(4000))
		}
	})
	return p
}

func (p *Proc) start() {
	p.t.Helper()
	cmd := exec.Command(p.bin)
	cmd.Env = p.env
	cmd.Stdout = p.logs
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	go func() { // exits when the process exits
		_ = cmd.Wait()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	poll.Until(p.t, 15*time.Second, p.Name+" /healthz", func() bool {
		select {
		case <-done:
			p.t.Fatalf("%s exited at start:\n%s", p.Name, p.logs.Tail(4000))
		default:
		}
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// Stop sends SIGTERM and waits up to grace for a graceful exit, then kills. It reports whether the
// process exited by itself within grace.
func (p *Proc) Stop(grace time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return true
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return true
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}

// Kill ends the process with SIGKILL, as a crash would.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts the process again on the same address with the same environment.
func (p *Proc) Restart() {
	p.t.Helper()
	p.Kill()
	p.start()
}

// Logs returns what the process printed so far.
func (p *Proc) Logs() string { return p.logs.Tail(1 << 20) }

// lockedBuffer collects process output from two pipes safely.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) > n {
		return string(b.buf[len(b.buf)-n:])
	}
	return string(b.buf)
}

var _ io.Writer = (*lockedBuffer)(nil)

// doRequest sends method to url with the user header and returns status and body.
func doRequest(t testing.TB, method, url, user string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

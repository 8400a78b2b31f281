package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
)

// Crowd is thousands of SSE viewers of one post held by a testdata/crowd process (see its doc:
// a lean EventSource-like viewer per goroutine, built without -race, with its own open-file
// budget). The test reads the crowd's state: connects, each viewer's newest count, delivery
// latency.
type Crowd struct {
	n    int
	cmd  *exec.Cmd
	logs *lockedBuffer

	mu   sync.Mutex
	in   io.WriteCloser
	out  *bufio.Scanner
	done chan struct{}
}

// crowdStatus is the crowd process's answer to "status".
type crowdStatus struct {
	Viewers   int              `json:"viewers"`
	Connected int              `json:"connected"`
	Connects  int64            `json:"connects"`
	Failures  int64            `json:"failures"`
	DialFails int64            `json:"dial_failures"`
	Refusals  int64            `json:"refusals"`
	Backwards int64            `json:"backwards"`
	Counts    map[string]int64 `json:"counts"`
	Samples   int64            `json:"samples"`
	P50us     int64            `json:"p50_us"`
	P99us     int64            `json:"p99_us"`
	P999us    int64            `json:"p999_us"`
}

// StartCrowd starts n viewers of post, viewer i connecting to addrs[i%len(addrs)], and waits until
// every one holds a stream (within timeout). The crowd is stopped when the test ends.
func StartCrowd(t testing.TB, addrs []string, post string, n int, timeout time.Duration) *Crowd {
	t.Helper()
	c := &Crowd{n: n, logs: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(noRaceBin(t, "crowd"), "-addrs", strings.Join(addrs, ","), "-path", "/sse/"+post, "-n", strconv.Itoa(n))
	c.cmd.Stderr = c.logs
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewScanner(stdout)
	c.out.Buffer(make([]byte, 64<<10), 16<<20)
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start crowd: %v", err)
	}
	go func() { // exits when the crowd process exits
		_ = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("crowd stderr:\n%s", c.logs.Tail(2000))
		}
	})
	c.WaitConnected(t, timeout)
	return c
}

// Close ends the crowd: its viewers disconnect and the process exits.
func (c *Crowd) Close() {
	_ = c.in.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (c *Crowd) command(t testing.TB, cmd string, reply any) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		t.Fatalf("crowd %s: %v", cmd, err)
	}
	if !c.out.Scan() {
		t.Fatalf("crowd %s: no reply (%v): %s", cmd, c.out.Err(), c.logs.Tail(2000))
	}
	if err := json.Unmarshal(c.out.Bytes(), reply); err != nil {
		t.Fatalf("crowd %s: %v", cmd, err)
	}
}

// Status returns the crowd's current state.
func (c *Crowd) Status(t testing.TB) crowdStatus {
	t.Helper()
	var s crowdStatus
	c.command(t, "status", &s)
	return s
}

// Measure turns latency recording on (clearing what was recorded) or off.
func (c *Crowd) Measure(t testing.TB, on bool) {
	t.Helper()
	cmd := "measure off"
	if on {
		cmd = "measure on"
	}
	var ok map[string]any
	c.command(t, cmd, &ok)
}

// WaitConnected waits until every viewer holds a stream.
func (c *Crowd) WaitConnected(t testing.TB, timeout time.Duration) time.Duration {
	t.Helper()
	return c.waitFor(t, timeout, "viewers to connect", func(s crowdStatus) bool { return s.Connected == c.n })
}

// WaitCount waits until every viewer shows want, and returns how long that took.
func (c *Crowd) WaitCount(t testing.TB, timeout time.Duration, want int64) time.Duration {
	t.Helper()
	return c.waitFor(t, timeout, "viewers to show "+strconv.FormatInt(want, 10), func(s crowdStatus) bool {
		return s.Counts[strconv.FormatInt(want, 10)] == int64(c.n)
	})
}

// WaitAtLeast waits until every viewer shows want or more (for a count that keeps moving).
func (c *Crowd) WaitAtLeast(t testing.TB, timeout time.Duration, want int64) time.Duration {
	t.Helper()
	return c.waitFor(t, timeout, "viewers to show at least "+strconv.FormatInt(want, 10), func(s crowdStatus) bool {
		for k, n := range s.Counts {
			if v, _ := strconv.ParseInt(k, 10, 64); v < want && n > 0 {
				return false
			}
		}
		return true
	})
}

func (c *Crowd) waitFor(t testing.TB, timeout time.Duration, what string, ok func(crowdStatus) bool) time.Duration {
	t.Helper()
	start := time.Now()
	poll.Check(t, timeout, func() error {
		if s := c.Status(t); !ok(s) {
			return fmt.Errorf("waiting for %s: %s", what, s)
		}
		return nil
	})
	return time.Since(start)
}

func (s crowdStatus) String() string {
	counts := s.Counts
	if len(counts) > 8 {
		counts = map[string]int64{"(distinct counts)": int64(len(counts))}
	}
	return fmt.Sprintf("%d/%d connected, %d connects, %d failures (%d dials, %d refusals), %d backwards, viewers by count %v",
		s.Connected, s.Viewers, s.Connects, s.Failures, s.DialFails, s.Refusals, s.Backwards, counts)
}

// The programs built without -race, once per test run, next to the harness's race-built ones:
// the crowd, and a fanout-svc for the tests that measure capacity and latency (the race detector
// slows the fan-out path several times over, so figures from it say nothing about the product).
var (
	noRaceOnce sync.Once
	noRaceErr  error
)

func noRaceBin(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(binDir, "norace")
	noRaceOnce.Do(func() {
		cmd := exec.Command("go", "build", "-o", dir+"/", "./fanout-svc", "./e2e/testdata/crowd")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			noRaceErr = fmt.Errorf("%w: %s", err, out)
		}
	})
	if noRaceErr != nil {
		t.Fatalf("build programs without -race: %v", noRaceErr)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// StartFanoutNoRace starts a fanout-svc built without the race detector, as StartFanout does.
func StartFanoutNoRace(t testing.TB, redisURL string, env ...string) *Proc {
	t.Helper()
	addr := freeport.Addr(t)
	p := &Proc{Name: "fanout-svc", Addr: addr, URL: "http://" + addr, t: t, bin: noRaceBin(t, "fanout-svc"), logs: &lockedBuffer{}}
	p.env = append(append(os.Environ(), "LISTEN_ADDR="+addr, "LOG_LEVEL=warn", "REDIS_URL="+redisURL, noViewerCap), env...)
	p.start()
	t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("fanout-svc logs (tail):\n%s", p.logs.Tail(4000))
		}
	})
	return p
}

package connecttest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Dialer is the parent's handle on the child that holds the client ends. Its methods are for
// one goroutine.
type Dialer struct {
	stdin io.WriteCloser
	out   *bufio.Scanner
	open  int
}

// Start launches the child (os.Args[0] with no tests selected; its TestMain or an init func must
// call Main) to dial addr and send request on every stream it opens, dialers streams at a time.
// The child exits, closing every stream, when tb's test ends.
func Start(tb testing.TB, addr, request string, dialers int) *Dialer {
	tb.Helper()
	args := []string{os.Args[0], "-test.run=^$", "-test.bench=^$"}
	if cpu := os.Getenv(cpuEnv); cpu != "" {
		args = append([]string{"taskset", "-c", cpu}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), addrEnv+"="+addr, requestEnv+"="+request, dialersEnv+"="+strconv.Itoa(dialers))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	return &Dialer{stdin: stdin, out: bufio.NewScanner(stdout)}
}

// Open opens n more streams and returns once each has read its first data event.
func (d *Dialer) Open(n int) error {
	if err := d.do("open", n); err != nil {
		return err
	}
	d.open += n
	return nil
}

// Close closes the n streams opened last. It returns once the child closed them; the server
// may not have noticed yet.
func (d *Dialer) Close(n int) error {
	n = min(n, d.open)
	if err := d.do("close", n); err != nil {
		return err
	}
	d.open -= n
	return nil
}

// Streams returns how many streams the child holds.
func (d *Dialer) Streams() int { return d.open }

func (d *Dialer) do(verb string, n int) error {
	if _, err := fmt.Fprintf(d.stdin, "%s %d\n", verb, n); err != nil {
		return fmt.Errorf("connecttest: %s: %w", verb, err)
	}
	if !d.out.Scan() {
		return fmt.Errorf("connecttest: %s: the child exited (%w)", verb, d.out.Err())
	}
	if line := d.out.Text(); line != "ok" {
		return fmt.Errorf("connecttest: %s %d: %s", verb, n, strings.TrimPrefix(line, "err "))
	}
	return nil
}

// Package redistest starts throwaway redis-server processes for tests: real Redis on a free
// loopback port, no persistence unless asked, killed when the test ends. Tests of likes talk to
// real Redis because pub/sub ordering, Lua atomicity and reconnects are the behaviour under test.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/freeport"
)

// Server is one redis-server process. Kill and Restart simulate crashes on the same port.
type Server struct {
	Addr string // host:port
	URL  string // redis://host:port/0

	t    testing.TB
	port int
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start runs redis-server on a free loopback port with persistence off (extra arguments, such as
// "--appendonly", "yes", override that) in a temporary directory, and kills it in t.Cleanup.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH: install it (apt-get install -y redis-server) and rerun")
	}
	s := &Server{t: t}
	dir := t.TempDir()
	for attempt := 0; ; attempt++ {
		s.port = freeport.Port(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		s.URL = "redis://" + s.Addr + "/0"
		s.args = append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
			"--protected-mode", "no"}, extra...)
		err = s.launch(bin)
		if err == nil || attempt == 4 {
			break
		}
	}
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// Client returns a go-redis client for the server, closed at the end of the test.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill sends SIGKILL, as a crash would, and waits for the process to go.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port and directory (so an append-only file is
// replayed) and waits until it accepts connections.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	bin, _ := exec.LookPath("redis-server")
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.launch(bin); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port may linger for a moment after a kill
	}
	s.t.Fatalf("restart redis-server: %v", err)
}

// Do runs one command on a short-lived connection, for test setup (CONFIG SET, CLIENT KILL).
func (s *Server) Do(args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

func (s *Server) launch(bin string) error {
	cmd := exec.Command(bin, s.args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() { // exits when redis-server closes its output (it exits)
		ready <- waitReady(out)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case err = <-ready:
	case <-time.After(10 * time.Second):
		err = fmt.Errorf("redis-server on port %d not ready after 10s", s.port)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	return nil
}

func waitReady(r io.Reader) error {
	sc := bufio.NewScanner(r)
	var last []string
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "Ready to accept connections") {
			return nil
		}
		last = append(last, line)
		if len(last) > 5 {
			last = last[1:]
		}
	}
	return fmt.Errorf("redis-server exited: %s", strings.Join(last, " | "))
}

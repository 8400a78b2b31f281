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
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/freeport"
)

// Server is one redis-server process. Kill and Restart simulate crashes on the same port.
type Server struct {
	Addr string // host:port
	URL  string // redis://host:port/0

	t     testing.TB
	bin   string
	port  int
	args  []string
	ready string // the log line that says the process serves

	mu  sync.Mutex
	cmd *exec.Cmd
	log logTail // the process's last log lines, across restarts
}

// Start runs redis-server on a free loopback port with persistence off (extra arguments, such as
// "--appendonly", "yes", override that) in a temporary directory, and kills it in t.Cleanup.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	return start(t, "Ready to accept connections", func(port int) []string {
		return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
			"--protected-mode", "no"}, extra...)
	})
}

// start runs redis-server with the arguments argsFor gives for a free port, trying another port
// if that one was taken meanwhile, until the process logs the line ready. It kills the process in
// t.Cleanup.
func start(t testing.TB, ready string, argsFor func(port int) []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH: install it (apt-get install -y redis-server) and rerun")
	}
	s := &Server{t: t, bin: bin, ready: ready}
	for attempt := 0; ; attempt++ {
		s.port = freeport.Port(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		s.URL = "redis://" + s.Addr + "/0"
		s.args = argsFor(s.port)
		err = s.launch()
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

// Signal sends sig to the process. SIGSTOP freezes it: alive, its sockets open, answering
// nothing, which is how a primary cut off from the network looks to its clients, its replicas
// and the Sentinels. SIGCONT thaws it. Kill works on a frozen process too.
func (s *Server) Signal(sig os.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("redis-server %s is not running", s.Addr)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal redis-server %s: %v", s.Addr, err)
	}
}

// Running reports whether the process was started and not killed since.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Restart starts the server again on the same port and directory (so an append-only file is
// replayed) and waits until it accepts connections.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.launch(); err == nil {
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

func (s *Server) launch() error {
	cmd := exec.Command(s.bin, s.args...)
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
		sc := bufio.NewScanner(out)
		ready <- waitReady(sc, s.ready, &s.log)
		for sc.Scan() {
			s.log.add(sc.Text())
		}
		_, _ = io.Copy(io.Discard, out) // a line too long for the scanner stops it
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

// waitReady reads the process's log into tail until a line contains ready, and fails with the
// last lines if the process exits first.
func waitReady(sc *bufio.Scanner, ready string, tail *logTail) error {
	var last []string
	for sc.Scan() {
		line := sc.Text()
		tail.add(line)
		if strings.Contains(line, ready) {
			return nil
		}
		last = append(last, line)
		if len(last) > 5 {
			last = last[1:]
		}
	}
	return fmt.Errorf("redis-server exited: %s", strings.Join(last, " | "))
}

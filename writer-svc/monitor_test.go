package main

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// monitor records, in the order Redis ran them, the commands one redis-server executed (MONITOR),
// so that a test can replay the like batches exactly as Redis applied them.
type monitor struct {
	srv   *redistest.Server
	conn  net.Conn
	lines chan string
	done  chan error
}

// startMonitor opens a MONITOR connection to srv.
func startMonitor(t *testing.T, srv *redistest.Server) *monitor {
	t.Helper()
	conn, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	r := bufio.NewReaderSize(conn, 1<<20)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.ReadString('\n'); err != nil || ok != "+OK\r\n" {
		t.Fatalf("MONITOR: %q, %v", ok, err)
	}
	m := &monitor{srv: srv, conn: conn, lines: make(chan string, 1<<16), done: make(chan error, 1)}
	go func() { // exits when the connection is closed
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(m.lines)
				m.done <- err
				return
			}
			m.lines <- strings.TrimSuffix(strings.TrimPrefix(line, "+"), "\r\n")
		}
	}()
	return m
}

// scriptLog is what Redis ran by script since a monitor started, in order.
type scriptLog struct {
	calls   [][]string      // the arguments of every EVALSHA
	evals   [][]string      // the arguments of every EVAL (a script not in Redis' cache)
	written map[string]bool // every key a script SET: a like call that returned early wrote none
}

// scripts returns the script calls Redis ran since the monitor started. It sends a marker
// command and reads up to it, so that every earlier command is included.
func (m *monitor) scripts(t *testing.T) scriptLog {
	t.Helper()
	marker := "monitor-end-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := m.srv.Do("ECHO", marker); err != nil {
		t.Fatal(err)
	}
	log := scriptLog{written: map[string]bool{}}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-m.lines:
			if !ok {
				t.Fatalf("monitor connection closed: %v", <-m.done)
			}
			if strings.Contains(line, marker) {
				_ = m.conn.Close()
				t.Logf("monitor stopped: %v", <-m.done)
				return log
			}
			args := monitorArgs(t, line)
			if strings.Contains(line, " lua] ") { // a command run inside a script
				if strings.EqualFold(args[0], "set") && len(args) > 1 {
					log.written[args[1]] = true
				}
				continue
			}
			switch strings.ToLower(args[0]) {
			case "evalsha":
				log.calls = append(log.calls, args)
			case "eval":
				log.evals = append(log.evals, args)
			}
		case <-deadline:
			t.Fatal("monitor: marker not seen within 30s")
		}
	}
}

// monitorArgs parses a MONITOR line: `<time> [<db> <client>] "arg" "arg" ...`, with Redis'
// escapes inside the quotes.
func monitorArgs(t *testing.T, line string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(line, "] ")
	if !ok {
		t.Fatalf("monitor line %q", line)
	}
	var args []string
	for len(rest) > 0 {
		if rest[0] == ' ' {
			rest = rest[1:]
			continue
		}
		if rest[0] != '"' {
			t.Fatalf("monitor line %q: unquoted argument", line)
		}
		var b strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] != '\\' || i+1 >= len(rest) {
				b.WriteByte(rest[i])
				continue
			}
			i++
			switch rest[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'x':
				v, _ := strconv.ParseUint(rest[i+1:i+3], 16, 8)
				b.WriteByte(byte(v))
				i += 2
			default:
				b.WriteByte(rest[i])
			}
		}
		args = append(args, b.String())
		rest = rest[min(i+1, len(rest)):]
	}
	if len(args) == 0 {
		t.Fatalf("monitor line %q: no arguments", line)
	}
	return args
}

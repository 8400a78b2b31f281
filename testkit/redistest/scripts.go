package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

// ScriptCalls returns how many scripts the server has run (EVALSHA and EVAL), from INFO
// commandstats: what a test counts to show that a path costs Redis no call, or one.
func (s *Server) ScriptCalls(t testing.TB) int64 {
	t.Helper()
	info, err := s.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := info.(string)
	var n int64
	for line := range strings.SplitSeq(text, "\r\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if v, ok := strings.CutPrefix(line, cmd); ok {
				calls, _, _ := strings.Cut(v, ",")
				c, err := strconv.ParseInt(calls, 10, 64)
				if err != nil {
					t.Fatalf("INFO commandstats: %q", line)
				}
				n += c
			}
		}
	}
	return n
}

// HoldScripts makes the server hold every script call and write (CLIENT PAUSE WRITE) until
// ReleaseScripts or the test's end: how a test keeps a call in flight while others queue behind
// it.
func (s *Server) HoldScripts(t testing.TB) {
	t.Helper()
	if _, err := s.Do("CLIENT", "PAUSE", 60000, "WRITE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.Do("CLIENT", "UNPAUSE") })
}

// ReleaseScripts ends HoldScripts: the held calls run.
func (s *Server) ReleaseScripts(t testing.TB) {
	t.Helper()
	if _, err := s.Do("CLIENT", "UNPAUSE"); err != nil {
		t.Fatal(err)
	}
}

// AwaitHeldScript waits until a script call is blocked by HoldScripts.
func (s *Server) AwaitHeldScript(t testing.TB) {
	t.Helper()
	poll.Until(t, 10*time.Second, "a script call held by CLIENT PAUSE", func() bool {
		list, err := s.Do("CLIENT", "LIST")
		text, _ := list.(string)
		return err == nil && strings.Contains(text, "flags=b") && strings.Contains(text, "cmd=evalsha")
	})
}

package redistest

import (
	"strconv"
	"strings"
	"testing"
)

// CommandCalls returns how many times the server has run cmd (lower case, as INFO commandstats
// names it: "wait", "set"), 0 for a command it has not run since it started or since CONFIG
// RESETSTAT: what a test counts to show what a path costs Redis.
func (s *Server) CommandCalls(t testing.TB, cmd string) int64 {
	t.Helper()
	info, err := s.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := info.(string)
	for line := range strings.SplitSeq(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			calls, _, _ := strings.Cut(v, ",")
			n, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				t.Fatalf("INFO commandstats: %q", line)
			}
			return n
		}
	}
	return 0
}

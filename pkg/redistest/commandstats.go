package redistest

import (
	"strconv"
	"strings"
	"testing"
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

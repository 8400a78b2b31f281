package main

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/testkit/redistest"
)

// TestNodeExportsItsConnectionCap: /metrics carries the cap the node enforces, so the cap alert
// divides by it: MAX_CONNS when set below the open-file limit, and the open-file limit minus
// fdHeadroom when MAX_CONNS asks for more than the process can open.
func TestNodeExportsItsConnectionCap(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur == unix.RLIM_INFINITY || lim.Cur < 2*fdHeadroom {
		t.Fatalf("open-file limit %d: the test needs a finite one above %d", lim.Cur, 2*fdHeadroom)
	}
	rs := redistest.Start(t)
	for _, tc := range []struct {
		maxConns string
		want     float64
	}{
		{"37", 37},
		{strconv.FormatUint(lim.Cur*4, 10), float64(lim.Cur) - fdHeadroom},
	} {
		n := startNode(t, rs.URL, map[string]string{"MAX_CONNS": tc.maxConns})
		if got := n.metric("likes_fanout_connection_cap"); got != tc.want {
			t.Errorf("MAX_CONNS=%s under an open-file limit of %d: likes_fanout_connection_cap %v, want %v", tc.maxConns, lim.Cur, got, tc.want)
		}
	}
}

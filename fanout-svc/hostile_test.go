package main

import (
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/hostiletest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestHostileClients runs the hostile-client suite against a real node on its real port, the
// fast accept loops in front of net/http as in production: after every attack the node answers
// /healthz, its heap is back within bounds, and a viewer connected before the suite gets the
// next update.
func TestHostileClients(t *testing.T) {
	rs := redistest.Start(t)
	n := startNode(t, rs.URL, map[string]string{"READ_HEADER_TIMEOUT": "1s"})
	w := n.watch(t, "hostile")
	var count int64
	hostiletest.Run(t, hostiletest.Target{
		Addr:        strings.TrimPrefix(n.base, "http://"),
		HeadTimeout: time.Second,
		Path:        "/sse/hostile-victim",
		ListPath:    "/sse?posts=",
		IdleConns:   2000,
		After: func(t *testing.T) {
			count++
			publish(t, rs, "hostile", count)
			poll.Until(t, 5*time.Second, "the viewer connected before the suite to get the update", func() bool {
				c, _, eof := w.state()
				return c == count && !eof
			})
		},
	})
	if p := n.metric("likes_fanout_loop_panics_total"); p != 0 {
		t.Errorf("%v loop panics recovered; want none", p)
	}
}

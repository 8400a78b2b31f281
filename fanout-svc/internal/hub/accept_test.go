package hub

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/fanout-svc/internal/fastaccept"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// TestLoopsAcceptTheirViewersAndShareThem: with the loops accepting from a listener
// themselves, a connect for a post the hub knows is served on the loop that accepted it, one for a
// post it does not know yet on a goroutine (fastaccept.Blocking), every viewer gets the post's
// updates, and two loops hold half the viewers each.
func TestLoopsAcceptTheirViewersAndShareThem(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 2})
	var onLoop, onGoroutine atomic.Int64
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := fastaccept.Listen(inner, fastaccept.Config{Prefix: "GET /"}, func(c net.Conn, _ *fastaccept.Head, mayBlock bool) fastaccept.Outcome {
		held, known := h.posts.AcquireKnown([]string{"acc"})
		switch {
		case known && !mayBlock:
			onLoop.Add(1)
		case !mayBlock:
			return fastaccept.Blocking
		default:
			onGoroutine.Add(1)
			if held, err = h.posts.Acquire(t.Context(), []string{"acc"}); err != nil {
				_ = c.Close()
				return fastaccept.Taken
			}
			h.Prime(upd("acc", 1)) // as a stream's setup does with its snapshot
		}
		h.Reserve(0)
		_ = h.Add(Viewer{Conn: c, Posts: held, Snapshot: []update.Update{{PostID: "acc"}}, Preamble: []byte(testPreamble)})
		return fastaccept.Taken
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Listen(testAcceptor{l})
	t.Cleanup(func() { // before the hub closes
		_ = l.Close()
		l.Wait()
	})

	const viewers = 300
	readers := make([]*reader, viewers)
	for i := range readers {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /sse/acc HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		readers[i] = startReader(t, c)
		if i == 0 { // the first one primes the post
			poll.Until(t, 10*time.Second, "the first viewer", func() bool { return h.Stats().Viewers.Load() == 1 })
		}
	}
	poll.Until(t, 10*time.Second, "every viewer", func() bool { return h.Stats().Viewers.Load() == viewers })
	if onGoroutine.Load() != 1 || onLoop.Load() != viewers-1 {
		t.Errorf("served %d on a loop and %d on a goroutine; want %d and 1", onLoop.Load(), onGoroutine.Load(), viewers-1)
	}
	for i, s := range h.loops { // even: each loop paces a room as if it held its share
		if n := s.size.Load(); n < viewers/2-2 || n > viewers/2+2 {
			t.Errorf("loop %d holds %d of %d viewers; want half, within 2", i, n, viewers)
		}
	}
	h.Publish(upd("acc", 7))
	for _, r := range readers {
		poll.Until(t, 10*time.Second, "count 7", func() bool { u, _ := r.last("acc"); return u.Count == 7 })
	}
}

// testAcceptor lets the loops accept from a fastaccept.Listener, as the node wires them.
type testAcceptor struct{ l *fastaccept.Listener }

func (a testAcceptor) Attach(p *epoll.Poller, wake func(), home any) (Intake, error) {
	in, err := a.l.Attach(p, wake, home)
	if err != nil {
		return nil, err
	}
	return in, nil
}

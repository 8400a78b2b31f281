package hub

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// TestLoopSurvivesAViewerPanic: a panic in the loop's work for one viewer (its write, its
// heartbeat, its removal) closes that viewer, is counted, and leaves the loop serving the other
// viewer of the same post. The panic is a real one, not a hook in the hub: the bad viewer's state
// is broken on its loop (an owed watching frame of a post it does not follow, which the loop's
// next write or heartbeat to it indexes out of range), or its OnClose panics.
func TestLoopSurvivesAViewerPanic(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger func(t *testing.T, h *Hub, bad net.Conn, badClient net.Conn)
		left    int64 // viewers after: the good one, and onLoop's
	}{
		{"write", func(t *testing.T, h *Hub, bad, _ net.Conn) {
			breakWatching(t, h, bad)
			h.Publish(upd("p", 1)) // the bad viewer's write panics, the good one's goes on
		}, 2},
		{"heartbeat", func(t *testing.T, h *Hub, bad, _ net.Conn) {
			breakWatching(t, h, bad) // the bad viewer's next heartbeat panics
		}, 2},
		{"removal", func(t *testing.T, h *Hub, _, badClient net.Conn) {
			badClient.Close() // the loop removes the viewer, whose OnClose panics
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHub(t, Config{Loops: 1, Heartbeat: 100 * time.Millisecond})
			var onClose func()
			if tc.name == "removal" {
				onClose = func() { panic("OnClose") }
			}
			bad, badClient := addViewerClosing(t, h, "p", onClose)
			_, goodClient := addViewer(t, h, false, "p")
			badR, good := startReader(t, badClient), startReader(t, goodClient)
			poll.Until(t, 5*time.Second, "both viewers registered", func() bool { return h.Stats().Viewers.Load() == 2 })

			tc.trigger(t, h, bad, badClient)
			poll.Until(t, 5*time.Second, "the panic recovered and the bad viewer removed", func() bool {
				return h.Stats().Panics.Load() == 1 && h.Stats().Viewers.Load() == tc.left && h.Admitted() == tc.left
			})
			if tc.name != "removal" {
				poll.Until(t, 5*time.Second, "the bad viewer's connection closed", func() bool {
					_, _, _, eof := badR.snapshot()
					return eof
				})
			}
			h.Publish(upd("p", 2))
			poll.Until(t, 5*time.Second, "the good viewer's update after the panic", func() bool {
				u, ok := good.last("p")
				return ok && u.Count == 2
			})
			pings := good.conn.Comments()
			poll.Until(t, 5*time.Second, "the good viewer's heartbeats after the panic", func() bool {
				return good.conn.Comments() > pings
			})
		})
	}
}

// addViewerClosing is addViewer for one post with an OnClose.
func addViewerClosing(t *testing.T, h *Hub, post string, onClose func()) (net.Conn, net.Conn) {
	t.Helper()
	acquired, err := h.posts.Acquire(context.Background(), []string{post})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Reserve(0) {
		t.Fatal("reserve refused")
	}
	server, client := tcpPair(t)
	if err := h.Add(Viewer{Conn: server, Posts: acquired, Snapshot: []update.Update{{PostID: post}},
		Preamble: []byte(testPreamble), OnClose: onClose}); err != nil {
		t.Fatal(err)
	}
	return server, client
}

// breakWatching makes the viewer on conn owe a watching frame of a post it does not follow (link
// 63 of a one-post viewer), which the loop's next write or heartbeat to it indexes out of range.
func breakWatching(t *testing.T, h *Hub, conn net.Conn) {
	t.Helper()
	fd, err := epoll.SocketFD(conn)
	if err != nil {
		t.Fatal(err)
	}
	onLoop(t, h, func(s *loop) {
		v := s.viewers[fd]
		if v == nil {
			panic("no viewer on the loop for the connection")
		}
		v.watching |= 1 << 63
	})
}

// onLoop runs f on h's one loop, where the loop's state may be touched, and returns after it ran.
// It gets there through the only test code a loop calls: a throwaway viewer's Resume, which the
// loop calls while it adopts that viewer.
func onLoop(t *testing.T, h *Hub, f func(s *loop)) {
	t.Helper()
	acquired, err := h.posts.Acquire(context.Background(), []string{"onloop"})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Reserve(0) {
		t.Fatal("reserve refused")
	}
	server, _ := tcpPair(t)
	ran := make(chan struct{})
	resume := func(int, update.Update) bool {
		f(h.loops[0])
		close(ran)
		return false
	}
	if err := h.Add(Viewer{Conn: server, Posts: acquired, Snapshot: []update.Update{{PostID: "onloop"}},
		Preamble: []byte(testPreamble), Resume: resume}); err != nil {
		t.Fatal(err)
	}
	<-ran
}

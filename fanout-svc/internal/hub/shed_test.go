package hub

import (
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

// TestShedClosesViewersAndKeepsServing: Shed closes every viewer of the moment with a retry hint,
// and the hub goes on admitting and serving viewers (a node that lost Redis is not stopping).
func TestShedClosesViewersAndKeepsServing(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	var readers []*reader
	for range 20 {
		_, c := addViewer(t, h, false, "s")
		r := startReader(t, c)
		r.mu.Lock()
		r.keepRaw = true
		r.mu.Unlock()
		readers = append(readers, r)
	}
	poll.Until(t, 10*time.Second, "20 viewers", func() bool { return h.Stats().Viewers.Load() == 20 })
	h.Shed(50 * time.Millisecond)
	for i, r := range readers {
		poll.Until(t, 10*time.Second, "a shed viewer's EOF", func() bool { _, _, _, eof := r.snapshot(); return eof })
		r.mu.Lock()
		raw := string(r.raw)
		r.mu.Unlock()
		if !strings.Contains(raw, "\nretry: ") && !strings.HasPrefix(raw, "retry: ") {
			t.Errorf("viewer %d got %q before its close; want a retry hint", i, raw)
		}
	}
	poll.Until(t, 10*time.Second, "no viewers", func() bool { return h.Stats().Viewers.Load() == 0 })

	_, c := addViewer(t, h, false, "s")
	after := startReader(t, c)
	h.Publish(upd("s", 7))
	poll.Until(t, 10*time.Second, "the viewer added after the shed to get count 7", func() bool {
		u, ok := after.last("s")
		return ok && u.Count == 7
	})
	if _, _, _, eof := after.snapshot(); eof {
		t.Errorf("a viewer added after the shed was closed")
	}
}

// TestStopSheddingKeepsTheRest: a shed stopped early (Redis came back) leaves the viewers it
// had not reached yet connected, past the end of its window.
func TestStopSheddingKeepsTheRest(t *testing.T) {
	const n, window = 40, 2 * time.Second
	h, _ := newTestHub(t, Config{Loops: 1})
	var readers []*reader
	for range n {
		_, c := addViewer(t, h, false, "k")
		readers = append(readers, startReader(t, c))
	}
	poll.Until(t, 10*time.Second, "viewers", func() bool { return h.Stats().Viewers.Load() == n })
	start := time.Now()
	h.Shed(window)
	poll.Until(t, 10*time.Second, "the shed to close a first viewer", func() bool { return h.Stats().Viewers.Load() < n })
	h.StopShedding()
	// The loop takes the stop in the loop iteration that handles this update at the latest.
	h.Publish(upd("k", 1))
	open := func() (left int) {
		for _, r := range readers {
			if _, _, _, eof := r.snapshot(); !eof {
				left++
			}
		}
		return left
	}
	poll.Until(t, 10*time.Second, "every open viewer to get count 1", func() bool {
		for _, r := range readers {
			u, ok := r.last("k")
			if _, _, _, eof := r.snapshot(); !eof && (!ok || u.Count != 1) {
				return false
			}
		}
		return true
	})
	kept := open()
	if kept == 0 || kept == n {
		t.Fatalf("%d of %d viewers open after the stop; want some closed and some kept", kept, n)
	}
	time.Sleep(time.Until(start.Add(window + 200*time.Millisecond))) // past the window's end
	if got := open(); got != kept {
		t.Errorf("%d viewers open after the window ended; want the %d kept at the stop", got, kept)
	}
	if got := h.Stats().Viewers.Load(); got != int64(kept) {
		t.Errorf("hub counts %d viewers; want %d", got, kept)
	}
}

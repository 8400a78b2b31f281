package hub

import (
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/poll"
	"github.com/likes/likes/pkg/update"
)

func watch(post string, n, ts int64) update.Watching {
	return update.Watching{PostID: post, Watching: n, TS: ts}
}

// watching returns the watching events the reader got for post, and how many carried an id.
func (r *reader) watching(post string) (got []update.Watching, withID int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.watch {
		if w.PostID == post {
			got = append(got, w)
		}
	}
	return got, r.watchID
}

func (r *reader) lastWatching(post string) int64 {
	got, _ := r.watching(post)
	if len(got) == 0 {
		return -1
	}
	return got[len(got)-1].Watching
}

func TestWatchingReachesEveryViewerOnceWithoutID(t *testing.T) {
	h, _ := newTestHub(t, Config{Shards: 2})
	var readers []*reader
	for range 3 {
		_, c := addViewer(t, h, false, "42")
		readers = append(readers, startReader(t, c))
	}
	_, mc := addViewer(t, h, true, "42", "43")
	multi := startReader(t, mc)
	multi.mu.Lock()
	multi.keepRaw = true
	multi.mu.Unlock()
	readers = append(readers, multi)
	poll.Until(t, 10*time.Second, "snapshots", func() bool { ev, _, _, _ := multi.snapshot(); return len(ev) == 2 })

	h.PublishWatching(watch("42", 12345, 1700000000000000))
	h.PublishWatching(watch("42", 12345, 1700000002000000)) // unchanged: not sent again
	h.PublishWatching(watch("42", 999, 1699999998000000))   // older: dropped
	h.Publish(upd("42", 1))                                 // a count after them, as a barrier
	for i, r := range readers {
		poll.Until(t, 10*time.Second, "count after the watching number", func() bool { u, _ := r.last("42"); return u.Count == 1 })
		got, withID := r.watching("42")
		if len(got) != 1 || got[0] != watch("42", 12345, 1700000000000000) || withID != 0 {
			t.Errorf("viewer %d got watching %+v (%d with an id); want 12345 once, no id", i, got, withID)
		}
	}
	if got := h.Stats().WatchingUpdates.Load(); got != 1 {
		t.Errorf("watching updates = %d; want 1 (the repeat and the older one dropped)", got)
	}
	multi.mu.Lock()
	raw := string(multi.raw)
	multi.mu.Unlock()
	frame := "event: watching\ndata: {\"post_id\":\"42\",\"watching\":12345,\"ts\":1700000000000000}\n\n"
	if !strings.Contains(raw, frame) {
		t.Errorf("stream lacks the watching frame %q:\n%q", frame, raw)
	}
	// The multi-post stream's last id is still the count's version: a watching event moves nothing.
	if _, ids, _, _ := multi.snapshot(); ids[len(ids)-1] != "1001" {
		t.Errorf("last id %q; want the count's version 1001", ids[len(ids)-1])
	}
}

func TestWatchingPerPostOnAMultiPostStream(t *testing.T) {
	h, _ := newTestHub(t, Config{Shards: 1})
	_, c := addViewer(t, h, true, "a", "b", "c")
	r := startReader(t, c)
	h.PublishWatching(watch("a", 1, 10))
	h.PublishWatching(watch("b", 2, 10))
	h.PublishWatching(watch("c", 3, 10))
	poll.Until(t, 10*time.Second, "every post's number", func() bool {
		return r.lastWatching("a") == 1 && r.lastWatching("b") == 2 && r.lastWatching("c") == 3
	})
	h.PublishWatching(watch("b", 5, 20))
	poll.Until(t, 10*time.Second, "b's new number", func() bool { return r.lastWatching("b") == 5 })
	for post, want := range map[string]int{"a": 1, "b": 2, "c": 1} {
		if got, _ := r.watching(post); len(got) != want {
			t.Errorf("post %s: %d watching events; want %d", post, len(got), want)
		}
	}
}

func TestNewViewerGetsTheCurrentWatchingNumber(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	_, first := addViewer(t, h, false, "p")
	r1 := startReader(t, first)
	h.PublishWatching(watch("p", 7, 10))
	poll.Until(t, 10*time.Second, "first viewer's number", func() bool { return r1.lastWatching("p") == 7 })
	_, second := addViewer(t, h, true, "q", "p")
	r2 := startReader(t, second)
	poll.Until(t, 10*time.Second, "the number at registration", func() bool { return r2.lastWatching("p") == 7 })
	if got, _ := r2.watching("q"); len(got) != 0 {
		t.Errorf("post q without a number gave %+v", got)
	}
}

func TestBlockedViewerGetsTheNewestWatchingNumber(t *testing.T) {
	h, _ := newTestHub(t, Config{Shards: 1})
	stalled := stalledViewer(t, h, "w")
	_, c := addViewer(t, h, false, "w")
	sentinel := startReader(t, c)
	// Publish counts one at a time, each awaited by a reading viewer (so no batch overflows and
	// no frame leaves the ring), until one is conflated: only a full socket conflates then, so the
	// stalled viewer is blocked from here on.
	for i := int64(1); h.Stats().Conflated.Load() == 0; i++ {
		if i > 100000 {
			t.Fatal("the stalled viewer's socket never filled")
		}
		h.Publish(upd("w", i))
		poll.Until(t, 10*time.Second, "sentinel at the count", func() bool { u, _ := sentinel.last("w"); return u.Count == i })
	}
	// How many numbers slip through while the kernel settles the stalled socket's buffers depends
	// on the kernel; a queue would deliver every one of the 2,000, a latest-value slot the newest
	// and at most the few the kernel let through.
	const numbers = 2000
	for n := int64(1); n <= numbers; n++ {
		h.PublishWatching(watch("w", n, 10*n))
	}
	poll.Until(t, 10*time.Second, "sentinel at the newest number", func() bool { return sentinel.lastWatching("w") == numbers })
	r := startReader(t, stalled)
	poll.Until(t, 10*time.Second, "newest number after draining", func() bool { return r.lastWatching("w") == numbers })
	got, _ := r.watching("w")
	if len(got) > numbers/10 {
		t.Errorf("a viewer blocked for %d numbers got %d watching events; want the newest and a few others", numbers, len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Watching <= got[i-1].Watching {
			t.Fatalf("watching events %d and %d: %d then %d; want only newer numbers", i-1, i, got[i-1].Watching, got[i].Watching)
		}
	}
}

func TestLocalViewers(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	addViewer(t, h, false, "a")
	addViewer(t, h, false, "a")
	addViewer(t, h, true, "a", "b")
	got := map[string]int{}
	h.LocalViewers(func(post string, n int) { got[post] = n })
	if len(got) != 2 || got["a"] != 3 || got["b"] != 1 {
		t.Errorf("local viewers %v; want a:3 b:1", got)
	}
}

func TestWatchingForAPostWithoutViewersIsDropped(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	h.PublishWatching(watch("nobody", 3, 10))
	if got := h.Stats().WatchingUpdates.Load(); got != 0 {
		t.Errorf("watching updates = %d; want 0", got)
	}
}

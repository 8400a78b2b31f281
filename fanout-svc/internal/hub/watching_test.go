package hub

import (
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
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
	h, _ := newTestHub(t, Config{Loops: 2})
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

	h.PublishWatching(watch("42", 12345, 1700000000000000)) // shown as 12,300
	h.PublishWatching(watch("42", 12345, 1700000002000000)) // unchanged: not sent again
	h.PublishWatching(watch("42", 12320, 1700000004000000)) // shows the same 12,300: not sent
	h.PublishWatching(watch("42", 999, 1699999998000000))   // older: dropped
	h.Publish(upd("42", 1))                                 // a count after them, carrying the number
	for i, r := range readers {
		poll.Until(t, 10*time.Second, "count after the watching number", func() bool { u, _ := r.last("42"); return u.Count == 1 })
		got, withID := r.watching("42")
		if len(got) != 1 || got[0] != watch("42", 12300, 1700000000000000) || withID != 0 {
			t.Errorf("viewer %d got watching %+v (%d with an id); want 12300 once, no id", i, got, withID)
		}
	}
	if got := h.Stats().WatchingUpdates.Load(); got != 1 {
		t.Errorf("watching updates = %d; want 1 (the repeats and the older one dropped)", got)
	}
	multi.mu.Lock()
	raw := string(multi.raw)
	multi.mu.Unlock()
	frame := "event: watching\ndata: {\"post_id\":\"42\",\"watching\":12300,\"ts\":1700000000000000}\n\n"
	if !strings.Contains(raw, frame) {
		t.Errorf("stream lacks the watching frame %q:\n%q", frame, raw)
	}
	// The multi-post stream's last id is still the count's version: a watching event moves nothing.
	if _, ids, _, _ := multi.snapshot(); ids[len(ids)-1] != "1001" {
		t.Errorf("last id %q; want the count's version 1001", ids[len(ids)-1])
	}
}

// shortHeartbeat is the heartbeat of tests in which a watching number reaches an idle viewer: it
// arrives with the heartbeat, and these tests should not wait the default 15 s for it.
const shortHeartbeat = 50 * time.Millisecond

func TestWatchingPerPostOnAMultiPostStream(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1, Heartbeat: shortHeartbeat})
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
	h, _ := newTestHub(t, Config{Heartbeat: shortHeartbeat})
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
	h, _ := newTestHub(t, Config{Loops: 1})
	stalled := stalledViewer(t, h, "w")
	_, c := addViewer(t, h, false, "w")
	sentinel := startReader(t, c)
	// Publish counts one at a time, each awaited by a reading viewer (so no batch overflows and
	// no frame leaves the ring), until one is conflated: only a full socket conflates then, so the
	// stalled viewer is blocked from here on.
	i := int64(1)
	for ; h.Stats().Conflated.Load() == 0; i++ {
		if i > 100000 {
			t.Fatal("the stalled viewer's socket never filled")
		}
		h.Publish(upd("w", i))
		poll.Until(t, 10*time.Second, "sentinel at the count", func() bool { u, _ := sentinel.last("w"); return u.Count == i })
	}
	// How many numbers slip through while the kernel settles the stalled socket's buffers depends
	// on the kernel; a queue would deliver every one of the 2,000, a newest-value pointer the newest
	// and at most the few the kernel let through. (2,000 is shown exactly: three digits.)
	const numbers = 2000
	for n := int64(1); n <= numbers; n++ {
		h.PublishWatching(watch("w", n, 10*n))
	}
	h.Publish(upd("w", i)) // the count that carries the newest number to the sentinel
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
	h.posts.LocalViewers(func(post string, n int) { got[post] = n })
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

// TestWatchingRidesAlongWithTheNextCount: a changed number costs no write of its own; it goes out
// in the same write as the viewer's next count frame, on single- and multi-post streams.
func TestWatchingRidesAlongWithTheNextCount(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1}) // the default heartbeat: no ping within the test
	_, sc := addViewer(t, h, false, "r")
	_, mc := addViewer(t, h, true, "r", "other")
	single, multi := startReader(t, sc), startReader(t, mc)
	for _, r := range []*reader{single, multi} {
		poll.Until(t, 10*time.Second, "snapshot", func() bool { _, ok := r.last("r"); return ok })
	}
	poll.Until(t, 10*time.Second, "both registration writes counted", func() bool { return h.Stats().Writes.Load() == 2 })

	h.PublishWatching(watch("r", 5, 10))
	poll.Until(t, 10*time.Second, "the number taken by the hub", func() bool { return h.Stats().WatchingUpdates.Load() == 1 })
	h.Publish(upd("r", 1))
	for _, r := range []*reader{single, multi} {
		poll.Until(t, 10*time.Second, "the count and the number", func() bool {
			u, _ := r.last("r")
			return u.Count == 1 && r.lastWatching("r") == 5
		})
	}
	h.Close() // the loop's tallies are final once it stopped
	if got := h.Stats().Writes.Load(); got != 4 {
		t.Errorf("%d writes; want 4: each viewer's registration, then its count with the number", got)
	}
	if got := h.Stats().WatchingSent.Load(); got != 2 {
		t.Errorf("%d watching frames sent; want 2", got)
	}
}

// TestIdleViewerGetsWatchingAtTheHeartbeat: a viewer that gets no count hears of a changed number
// with its heartbeat, in place of the ping; a heartbeat with nothing owed is a ping.
func TestIdleViewerGetsWatchingAtTheHeartbeat(t *testing.T) {
	const heartbeat = 300 * time.Millisecond
	h, _ := newTestHub(t, Config{Loops: 1, Heartbeat: heartbeat})
	added := time.Now() // no later than the registration write, from which the heartbeat counts
	_, c := addViewer(t, h, false, "idle")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "snapshot", func() bool { _, ok := r.last("idle"); return ok })
	h.PublishWatching(watch("idle", 8, 10))
	poll.Until(t, 10*time.Second, "the number at the heartbeat", func() bool { return r.lastWatching("idle") == 8 })
	if waited := time.Since(added); waited < heartbeat {
		t.Errorf("the number came %v after the viewer; want it with the heartbeat, %v after", waited, heartbeat)
	}
	if pings := r.conn.Comments(); pings != 0 {
		t.Errorf("%d pings before the number; want the heartbeat to carry the number instead", pings)
	}
	poll.Until(t, 10*time.Second, "a ping at the next heartbeat", func() bool { return r.conn.Comments() >= 1 })
	h.Close()
	st := h.Stats()
	if w, hb, ws := st.Writes.Load(), st.Heartbeats.Load(), st.WatchingSent.Load(); w != 2+hb || hb < 1 || ws != 1 {
		t.Errorf("writes, pings, watching frames = %d, %d, %d; want the registration, the number and the pings, one number", w, hb, ws)
	}
}

// TestWatchingThatShowsTheSameSendsNothing: above 1,000 a change the display would not show
// (12,301 -> 12,340, both 12,300) is dropped; one it shows is sent, rounded.
func TestWatchingThatShowsTheSameSendsNothing(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1})
	_, c := addViewer(t, h, false, "big")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "snapshot", func() bool { _, ok := r.last("big"); return ok })
	h.PublishWatching(watch("big", 12301, 10))
	h.Publish(upd("big", 1))
	poll.Until(t, 10*time.Second, "12,300", func() bool { return r.lastWatching("big") == 12300 })
	h.PublishWatching(watch("big", 12340, 20)) // shows as 12,300 too
	if got := h.Stats().WatchingUpdates.Load(); got != 1 {
		t.Errorf("watching updates = %d after 12,301 and 12,340; want 1", got)
	}
	h.Publish(upd("big", 2))
	poll.Until(t, 10*time.Second, "count 2", func() bool { u, _ := r.last("big"); return u.Count == 2 })
	h.PublishWatching(watch("big", 12390, 30)) // shows as 12,400
	h.Publish(upd("big", 3))
	poll.Until(t, 10*time.Second, "count 3", func() bool { u, _ := r.last("big"); return u.Count == 3 })
	got, _ := r.watching("big")
	if len(got) != 2 || got[0].Watching != 12300 || got[1].Watching != 12400 {
		t.Errorf("watching events %+v; want 12,300 then 12,400", got)
	}
}

// TestSmallWatchingNumbersAreExact: below 1,000 every change reaches the viewer as it is.
func TestSmallWatchingNumbersAreExact(t *testing.T) {
	h, _ := newTestHub(t, Config{Loops: 1})
	_, c := addViewer(t, h, true, "small", "also")
	r := startReader(t, c)
	poll.Until(t, 10*time.Second, "snapshot", func() bool { _, ok := r.last("small"); return ok })
	numbers := []int64{1, 2, 3, 2, 1, 0, 998, 999, 997}
	for i, n := range numbers {
		h.PublishWatching(watch("small", n, int64(10*(i+1))))
		h.Publish(upd("small", int64(i+1)))
		poll.Until(t, 10*time.Second, "the count", func() bool { u, _ := r.last("small"); return u.Count == int64(i+1) })
	}
	got, _ := r.watching("small")
	if len(got) != len(numbers) {
		t.Fatalf("watching events %+v; want %v", got, numbers)
	}
	for i, w := range got {
		if w.Watching != numbers[i] {
			t.Errorf("watching event %d: %d; want %d", i, w.Watching, numbers[i])
		}
	}
}

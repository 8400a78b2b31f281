package likes

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingWriter answers the writer's like API: one like per user per post, the new count back.
type countingWriter struct {
	mu     sync.Mutex
	counts map[string]int64
	users  map[string]bool
	fail   bool
}

func (c *countingWriter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	post := strings.TrimPrefix(r.URL.Path, "/like/")
	user := r.Header.Get("X-User-ID")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		http.Error(w, `{"error":"redis unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	liked := !c.users[post+"/"+user]
	if liked {
		c.users[post+"/"+user] = true
		c.counts[post]++
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"post_id": post, "count": c.counts[post], "liked": liked})
}

func newWriter(t *testing.T) (*countingWriter, *httptest.Server) {
	cw := &countingWriter{counts: map[string]int64{}, users: map[string]bool{}}
	srv := httptest.NewServer(cw)
	t.Cleanup(srv.Close)
	return cw, srv
}

func TestClosedLoopFreshUsersAndMaxCounts(t *testing.T) {
	cw, srv := newWriter(t)
	l := New(srv.URL, []string{"a", "b", "c"}, "u", 8, 5*time.Second)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	l.Closed(ctx, 8)
	acked, errs, _ := l.Recorder().Totals()
	if acked < 10 || errs != 0 {
		t.Fatalf("acked %d, errors %d; want many acked and no errors (a repeated user would fail)", acked, errs)
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var total int64
	for p, post := range []string{"a", "b", "c"} {
		if got := l.Recorder().MaxCounts()[p]; got != cw.counts[post] {
			t.Errorf("post %s max acked count %d; want the writer's final count %d", post, got, cw.counts[post])
		}
		total += cw.counts[post]
	}
	if total != acked {
		t.Errorf("writer counted %d likes; loadgen acked %d", total, acked)
	}
}

// TestOpenLoopRateAndWindow: the open loop never sends faster than its rate, counts every like
// it sends once (acknowledged, failed or skipped), and a window that spans the run receives every
// acknowledgement with one latency sample each. How close the loop comes to its rate depends on
// the machine's load, so it is measured by the ramp, not asserted here.
func TestOpenLoopRateAndWindow(t *testing.T) {
	_, srv := newWriter(t)
	l := New(srv.URL, []string{"a"}, "u", 16, 5*time.Second)
	defer l.Close()
	start := time.Now()
	w := &Window{Start: start, End: start.Add(time.Hour)}
	l.Recorder().SetWindow(w)
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(500*time.Millisecond))
	defer cancel()
	const rate = 200
	l.Open(ctx, rate, 64)
	elapsed := time.Since(start)
	acked, errs, skipped := l.Recorder().Totals()
	if most := int64(rate*elapsed.Seconds()) + 1; acked+errs+skipped > most {
		t.Fatalf("sent %d likes in %v at %d/s; want at most %d", acked+errs+skipped, elapsed, rate, most)
	}
	if acked == 0 || errs != 0 {
		t.Fatalf("acked %d, errors %d (last %q); want some acknowledged and no errors", acked, errs, l.Recorder().LastError())
	}
	if got := w.Acked.Load(); got != acked {
		t.Fatalf("window spanning the run acked %d; want all %d", got, acked)
	}
	if w.Latency.Count() != uint64(w.Acked.Load()) {
		t.Fatalf("latency samples %d; want one per acked like in the window (%d)", w.Latency.Count(), w.Acked.Load())
	}
}

func TestErrorsAreCounted(t *testing.T) {
	cw, srv := newWriter(t)
	cw.fail = true
	l := New(srv.URL, []string{"a"}, "u", 2, time.Second)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	l.Closed(ctx, 2)
	acked, errs, _ := l.Recorder().Totals()
	if acked != 0 || errs == 0 || !strings.Contains(l.Recorder().LastError(), "503") {
		t.Fatalf("acked %d, errors %d, last %q; want only errors naming the 503", acked, errs, l.Recorder().LastError())
	}
}

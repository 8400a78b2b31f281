package clienttest

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// Viewer is an SSE client that behaves like a browser's EventSource: it reconnects after the
// server's retry delay, sends Last-Event-ID, and remembers the newest count of every post. It also
// records any update that went backwards (an older version after a newer one).
type Viewer struct {
	url string

	mu         sync.Mutex
	counts     map[string]int64
	versions   map[string]int64
	events     int
	backwards  int
	connects   int
	lastID     string
	retry      time.Duration
	connected  bool
	lastStatus int

	cancel context.CancelFunc
	done   chan struct{}
}

// Watch connects a viewer to url (a fanout /sse URL) and keeps it connected until the test ends.
func Watch(t testing.TB, url string) *Viewer {
	v := &Viewer{url: url, counts: map[string]int64{}, versions: map[string]int64{}, retry: time.Second, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	go v.loop(ctx) // exits when Close cancels ctx
	t.Cleanup(v.Close)
	return v
}

// Close disconnects the viewer for good.
func (v *Viewer) Close() {
	v.cancel()
	<-v.done
}

func (v *Viewer) loop(ctx context.Context) {
	defer close(v.done)
	for ctx.Err() == nil {
		v.session(ctx)
		v.mu.Lock()
		v.connected = false
		wait := v.retry
		v.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func (v *Viewer) session(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return
	}
	v.mu.Lock()
	if v.lastID != "" {
		req.Header.Set("Last-Event-ID", v.lastID)
	}
	v.mu.Unlock()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	v.mu.Lock()
	v.lastStatus = resp.StatusCode
	if resp.StatusCode == http.StatusOK {
		v.connected = true
		v.connects++
	}
	v.mu.Unlock()
	if resp.StatusCode != http.StatusOK {
		return
	}
	var dec sse.Decoder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && dec.Feed(buf[:n], v.handle) != nil {
			return
		}
		if err != nil {
			return
		}
	}
}

func (v *Viewer) handle(e *sse.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.Retry >= 0 {
		v.retry = time.Duration(e.Retry) * time.Millisecond
	}
	if e.HasID {
		v.lastID = string(e.ID)
	}
	if string(e.Event) != sse.EventCount {
		return
	}
	u, err := update.Parse(e.Data)
	if err != nil {
		return
	}
	v.events++
	if old, ok := v.versions[u.PostID]; ok && u.TS <= old {
		v.backwards++
		return
	}
	v.versions[u.PostID] = u.TS
	v.counts[u.PostID] = u.Count
}

// Count returns the newest count seen for post and whether any was seen.
func (v *Viewer) Count(post string) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.counts[post]
	return c, ok
}

// Stats returns events received, updates that went backwards, and successful connects.
func (v *Viewer) Stats() (events, backwards, connects int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.events, v.backwards, v.connects
}

// Connected reports whether the viewer currently holds an open stream.
func (v *Viewer) Connected() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.connected
}

// WaitCount waits until every viewer shows want for post.
func WaitCount(t testing.TB, timeout time.Duration, post string, want int64, viewers ...*Viewer) {
	t.Helper()
	WaitFor(t, timeout, func() bool {
		for _, v := range viewers {
			if c, ok := v.Count(post); !ok || c != want {
				return false
			}
		}
		return true
	}, "viewers of post "+post+" to show "+strconv.FormatInt(want, 10))
}

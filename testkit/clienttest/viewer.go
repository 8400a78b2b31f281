package clienttest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// Viewer is an SSE client that behaves like a browser's EventSource: it reconnects after the
// server's retry delay, sends Last-Event-ID, and remembers the newest count of every post. It also
// records any update that went backwards (an older version after a newer one), and the newest
// watching number of every post.
type Viewer struct {
	url string

	mu         sync.Mutex
	counts     map[string]int64
	versions   map[string]int64
	watching   map[string]int64
	watchingID int // watching events that carried an id (there must be none)
	events     int
	backwards  int
	connects   int
	lastID     string
	retry      time.Duration
	connected  bool

	cancel context.CancelFunc
	done   chan struct{}
}

// Watch connects a viewer to url (a fanout /sse URL) and keeps it connected until the test ends.
func Watch(t testing.TB, url string) *Viewer {
	v := &Viewer{url: url, counts: map[string]int64{}, versions: map[string]int64{}, watching: map[string]int64{},
		retry: time.Second, done: make(chan struct{})}
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
	req, err := sseclient.URLRequest(v.url)
	if err != nil {
		return
	}
	v.mu.Lock()
	req.LastEventID = v.lastID
	v.mu.Unlock()
	c, err := sseclient.Dial(ctx, req)
	if err != nil {
		return
	}
	defer c.Close()
	if err := c.Head(ctx); err != nil {
		return
	}
	v.mu.Lock()
	v.connected = true
	v.connects++
	v.mu.Unlock()
	_ = c.Run(ctx, v.handle)
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
	if string(e.Event) == sse.EventWatching {
		if w, err := update.ParseWatching(e.Data); err == nil {
			v.watching[w.PostID] = w.Watching
		}
		if e.HasID {
			v.watchingID++
		}
		return
	}
	if string(e.Event) != sse.EventCount {
		return
	}
	u, err := update.Parse(e.Data)
	if err != nil {
		return
	}
	v.events++
	if old, ok := v.versions[u.PostID]; ok && u.Version() <= old {
		v.backwards++
		return
	}
	v.versions[u.PostID] = u.Version()
	v.counts[u.PostID] = u.Count
}

// Count returns the newest count seen for post and whether any was seen.
func (v *Viewer) Count(post string) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.counts[post]
	return c, ok
}

// Watching returns the newest watching number seen for post and whether any was seen.
func (v *Viewer) Watching(post string) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, ok := v.watching[post]
	return n, ok
}

// LastID returns the id a reconnect would send as Last-Event-ID, and how many watching events
// carried an id.
func (v *Viewer) LastID() (id string, watchingWithID int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastID, v.watchingID
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
	poll.Until(t, timeout, "viewers of post "+post+" to show "+strconv.FormatInt(want, 10), func() bool {
		for _, v := range viewers {
			if c, ok := v.Count(post); !ok || c != want {
				return false
			}
		}
		return true
	})
}

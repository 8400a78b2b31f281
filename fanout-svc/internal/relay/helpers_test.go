package relay

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/update"
)

var keys = rediskeys.New("test:")

// recordingSink keeps every update it was handed, per post.
type recordingSink struct {
	mu      sync.Mutex
	updates map[string][]update.Update
}

func newRecordingSink() *recordingSink {
	return &recordingSink{updates: make(map[string][]update.Update)}
}

func (s *recordingSink) Publish(u update.Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates[u.PostID] = append(s.updates[u.PostID], u)
}

// has reports whether an update with count arrived for post.
func (s *recordingSink) has(post string, count int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.updates[post] {
		if u.Count == count {
			return true
		}
	}
	return false
}

// startRelay runs a relay on client until the test ends.
func startRelay(t *testing.T, client redis.UniversalClient) (*Relay, *recordingSink) {
	t.Helper()
	sink := newRecordingSink()
	rel := New(client, keys, sink, zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // exits when the test's cleanup cancels ctx
		defer close(done)
		rel.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("Run did not return within 15s of cancel")
		}
	})
	return rel, sink
}

// subscribe gives post a version if it has none (it exists, as after a like) and subscribes rel
// to it, failing the test on error.
func subscribe(t *testing.T, rel *Relay, post string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rel.client.SetNX(ctx, keys.Version(post), 1, 0).Err(); err != nil {
		t.Fatalf("create %s: %v", post, err)
	}
	if err := rel.Subscribe(ctx, post); err != nil {
		t.Fatalf("Subscribe(%s): %v", post, err)
	}
}

// store writes a post's count and version the way the like script does, and returns the payload
// the script would publish.
func store(t *testing.T, client redis.UniversalClient, post string, count, ver int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.MSet(ctx, keys.Count(post), count, keys.Version(post), ver).Err(); err != nil {
		t.Fatalf("store %s: %v", post, err)
	}
	return string(update.Update{PostID: post, Count: count, TS: ver}.AppendJSON(nil))
}

func itoa(i int) string { return strconv.Itoa(i) }

package posts

import (
	"context"
	"sync"
	"testing"
	"time"
)

// slowSubscriber stands in for the relay: every Unsubscribe takes unsubDelay, as a slow Redis
// would, and it counts the calls, the most in flight at once and the posts unsubscribed.
type slowSubscriber struct {
	unsubDelay time.Duration

	mu          sync.Mutex
	subscribed  map[string]int // Subscribe calls per post
	calls       int            // Unsubscribe calls
	inFlight    int
	maxInFlight int
	done        int // posts whose Unsubscribe returned
}

func newSlowSubscriber(delay time.Duration) *slowSubscriber {
	return &slowSubscriber{unsubDelay: delay, subscribed: map[string]int{}}
}

func (s *slowSubscriber) Subscribe(_ context.Context, post string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscribed[post]++
	return nil
}

func (s *slowSubscriber) Unsubscribe(ids []string) {
	s.mu.Lock()
	s.calls++
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.mu.Unlock()
	time.Sleep(s.unsubDelay) // the time a slow Redis takes to answer; nothing waits on it
	s.mu.Lock()
	s.inFlight--
	s.done += len(ids)
	s.mu.Unlock()
}

// unsubscribes returns the Unsubscribe calls so far, the most in flight at once, and the posts
// unsubscribed.
func (s *slowSubscriber) unsubscribes() (calls, peak, done int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.maxInFlight, s.done
}

// startRegistry starts a registry on sub, closed when the test ends.
func startRegistry(t testing.TB, cfg Config, sub Subscriber) *Registry {
	t.Helper()
	r := New(cfg, sub)
	t.Cleanup(r.Close)
	return r
}

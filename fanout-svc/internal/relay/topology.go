package relay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// topology maps each hash slot to the address of the master that owns it, as read from CLUSTER
// SLOTS and corrected by MOVED redirections. The relay keeps its own map, rather than asking
// go-redis, because it must know the owner right now after a slot moved: go-redis reloads its
// state lazily in the background.
type topology struct {
	client *redis.ClusterClient

	mu     sync.RWMutex
	owner  [slotCount]int16 // index into addrs, -1 when unknown
	addrs  []string
	loaded time.Time
	flight *load // the CLUSTER SLOTS in progress, shared by every caller that needs it
}

// load is one reload of the slot map; err is set before done is closed.
type load struct {
	done chan struct{}
	err  error
}

// Each CLUSTER SLOTS attempt asks one node (go-redis picks it at random) and gives up after
// loadAttempt, so that a stopped node costs a retry, not the whole reload.
const (
	loadAttempt  = 500 * time.Millisecond
	loadAttempts = 4
)

func newTopology(client *redis.ClusterClient) *topology {
	t := &topology{client: client}
	for i := range t.owner {
		t.owner[i] = -1
	}
	return t
}

// ownerOf returns the address of the master that owns slot, or "" when unknown.
func (t *topology) ownerOf(slot int) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if i := t.owner[slot]; i >= 0 {
		return t.addrs[i]
	}
	return ""
}

// masters returns the addresses of the masters that own at least one slot.
func (t *topology) masters() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Clone(t.addrs)
}

// moved records a MOVED redirection: the node that answered knows better than our map.
func (t *topology) moved(slot int, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := slices.Index(t.addrs, addr)
	if i < 0 {
		i = len(t.addrs)
		t.addrs = append(t.addrs, addr)
	}
	t.owner[slot] = int16(i)
}

// refresh reloads the map with CLUSTER SLOTS unless it was loaded less than minAge ago. Callers
// that arrive while a reload is in progress wait for it (or their ctx) instead of starting
// another; the reload itself runs on the first caller's goroutine but not on its cancellation,
// so that caller leaving does not fail the others.
func (t *topology) refresh(ctx context.Context, minAge time.Duration) error {
	t.mu.Lock()
	if time.Since(t.loaded) < minAge {
		t.mu.Unlock()
		return nil
	}
	if f := t.flight; f != nil {
		t.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &load{done: make(chan struct{})}
	t.flight = f
	t.mu.Unlock()

	f.err = t.load(context.WithoutCancel(ctx))
	t.mu.Lock()
	t.flight = nil
	t.mu.Unlock()
	close(f.done)
	return f.err
}

// load reads CLUSTER SLOTS, retrying on another node after a slow or failed attempt, and
// replaces the map.
func (t *topology) load(ctx context.Context) error {
	var slots []redis.ClusterSlot
	var err error
	for range loadAttempts {
		actx, cancel := context.WithTimeout(ctx, loadAttempt)
		//nolint:staticcheck // SA1019: CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every version we support.
		slots, err = t.client.ClusterSlots(actx).Result()
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("cluster slots: %w", err)
	}
	var owner [slotCount]int16
	for i := range owner {
		owner[i] = -1
	}
	var addrs []string
	for _, s := range slots {
		if len(s.Nodes) == 0 || s.Start < 0 || s.End >= slotCount || s.Start > s.End {
			continue
		}
		addr := s.Nodes[0].Addr // the first node of a range is its master
		i := slices.Index(addrs, addr)
		if i < 0 {
			i = len(addrs)
			addrs = append(addrs, addr)
		}
		for slot := s.Start; slot <= s.End; slot++ {
			owner[slot] = int16(i)
		}
	}
	t.mu.Lock()
	t.owner, t.addrs, t.loaded = owner, addrs, time.Now()
	t.mu.Unlock()
	return nil
}

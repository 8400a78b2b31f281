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

	mu      sync.RWMutex
	owner   [slotCount]int16 // index into addrs, -1 when unknown
	addrs   []string
	loaded  time.Time
	loading sync.Mutex // one CLUSTER SLOTS at a time
}

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

// refresh reloads the map with CLUSTER SLOTS unless it was loaded less than minAge ago.
func (t *topology) refresh(ctx context.Context, minAge time.Duration) error {
	t.loading.Lock()
	defer t.loading.Unlock()
	t.mu.RLock()
	fresh := time.Since(t.loaded) < minAge
	t.mu.RUnlock()
	if fresh {
		return nil
	}
	slots, err := t.client.ClusterSlots(ctx).Result()
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

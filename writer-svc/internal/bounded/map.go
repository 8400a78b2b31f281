// Package bounded is a map from strings that many request goroutines share and that no input can
// grow past its capacity: the writer's memories of what Redis said (the keys it refused, the posts
// that exist), each of which a flood of distinct keys would otherwise grow without end.
package bounded

import (
	"hash/maphash"
	"sync"
)

// stripes is how many locks the map is split under, so that request goroutines rarely meet.
const stripes = 16

// Map holds at most its capacity of keys. A Put into a full stripe first drops the entries its
// stale function calls stale, and then arbitrary ones, an eighth of the stripe, so that a flood
// pays for a sweep once every capacity/8 new keys, not on every one.
type Map[V any] struct {
	seed    maphash.Seed
	per     int // keys per stripe
	stripes [stripes]stripe[V]
}

type stripe[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// New returns a Map of at most capacity keys (at least one per stripe).
func New[V any](capacity int) *Map[V] {
	m := &Map[V]{seed: maphash.MakeSeed(), per: max(capacity/stripes, 1)}
	for i := range m.stripes {
		m.stripes[i].m = make(map[string]V)
	}
	return m
}

func (m *Map[V]) stripe(key string) *stripe[V] {
	return &m.stripes[maphash.String(m.seed, key)%stripes]
}

// Get returns key's value.
func (m *Map[V]) Get(key string) (V, bool) {
	s := m.stripe(key)
	s.mu.Lock()
	v, ok := s.m[key]
	s.mu.Unlock()
	return v, ok
}

// Put sets key's value, making room as the Map's doc says; stale may be nil (nothing is stale).
func (m *Map[V]) Put(key string, v V, stale func(V) bool) {
	s := m.stripe(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	m.put(s, key, v, stale)
}

// Update calls f with key's value (ok false: none) under the key's lock, so that a read and the
// write it decides are one step for the goroutines sharing the key; f returns the value to keep,
// or keep false to delete the key.
func (m *Map[V]) Update(key string, f func(v V, ok bool) (next V, keep bool), stale func(V) bool) {
	s := m.stripe(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	next, keep := f(v, ok)
	switch {
	case keep:
		m.put(s, key, next, stale)
	case ok:
		delete(s.m, key)
	}
}

// put sets key in s, whose lock the caller holds.
func (m *Map[V]) put(s *stripe[V], key string, v V, stale func(V) bool) {
	if _, ok := s.m[key]; !ok && len(s.m) >= m.per {
		if stale != nil {
			for k, old := range s.m {
				if stale(old) {
					delete(s.m, k)
				}
			}
		}
		for k := range s.m {
			if len(s.m) < m.per-m.per/8 {
				break
			}
			delete(s.m, k)
		}
	}
	s.m[key] = v
}

// Len is how many keys the Map holds.
func (m *Map[V]) Len() int {
	n := 0
	for i := range m.stripes {
		s := &m.stripes[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

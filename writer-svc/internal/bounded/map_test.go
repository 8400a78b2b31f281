package bounded

import (
	"strconv"
	"sync"
	"testing"
)

// TestMapStaysWithinItsCapacity: a flood of distinct keys from many goroutines never holds more
// than the capacity, and the newest key is always kept.
func TestMapStaysWithinItsCapacity(t *testing.T) {
	m := New[int](1024)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				m.Put(strconv.Itoa(g)+":"+strconv.Itoa(i), i, nil)
			}
		}()
	}
	wg.Wait()
	if n := m.Len(); n > 1024 {
		t.Errorf("%d keys; want at most 1024", n)
	}
	m.Put("newest", 7, nil)
	if v, ok := m.Get("newest"); !ok || v != 7 {
		t.Errorf("newest: %v %v; want 7", v, ok)
	}
}

// TestMapDropsStaleEntriesFirst: a full stripe gives up its stale entries before fresh ones (a
// stripe of 8 gets one fresh key on average: far from its capacity once the stale are gone).
func TestMapDropsStaleEntriesFirst(t *testing.T) {
	m := New[bool](stripes * 8) // 8 a stripe
	for i := range stripes * 64 {
		m.Put("old"+strconv.Itoa(i), false, nil) // false: stale
	}
	fresh := 0
	for i := range stripes {
		m.Put("fresh"+strconv.Itoa(i), true, func(v bool) bool { return !v })
	}
	for i := range stripes {
		if _, ok := m.Get("fresh" + strconv.Itoa(i)); ok {
			fresh++
		}
	}
	if fresh != stripes {
		t.Errorf("%d of %d fresh keys kept; want all (the stale ones make room)", fresh, stripes)
	}
}

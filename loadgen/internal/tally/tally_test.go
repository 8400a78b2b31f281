package tally

import (
	"sync"
	"testing"
	"unsafe"
)

func TestSum(t *testing.T) {
	tl := New(100)
	for count := int64(90); count <= 110; count++ { // 90..100 are at or below the base
		tl.Add(count)
	}
	tl.Add(105)
	tl.Add(100 + chunkLen + 3) // second chunk
	tl.Add(100 + MaxCounts + 1)
	tests := []struct {
		lo, hi int64
		want   int64
	}{
		{100, 110, 11},  // 101..110 once, 105 twice
		{104, 105, 2},   // just 105
		{0, 1000, 11},   // clamped to the base
		{110, 50000, 1}, // the one in the second chunk
		{200, 150, 0},   // empty range
	}
	for _, tt := range tests {
		if got := tl.Sum(tt.lo, tt.hi); got != tt.want {
			t.Errorf("Sum(%d,%d) = %d; want %d", tt.lo, tt.hi, got, tt.want)
		}
	}
	if got := tl.Overflow.Load(); got != 1 {
		t.Errorf("Overflow = %d; want 1", got)
	}
}

func TestConcurrentAdd(t *testing.T) {
	tl := New(0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for count := int64(1); count <= 3*chunkLen; count++ {
				tl.Add(count)
			}
		})
	}
	wg.Wait()
	if got, want := tl.Sum(0, 3*chunkLen), int64(8*3*chunkLen); got != want {
		t.Fatalf("Sum = %d; want %d", got, want)
	}
}

// TestFarCounts adds counts in other pages and at the last one a tally holds, from racing
// goroutines: each page and chunk is made once, and no delivery is lost to a lost race.
func TestFarCounts(t *testing.T) {
	tl := New(0)
	far := []int64{1, chunkLen, chunkLen + 1, chunkLen * pageLen, chunkLen*pageLen + 1, 5 * chunkLen * pageLen, MaxCounts}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, count := range far {
				tl.Add(count)
			}
		})
	}
	wg.Wait()
	for _, count := range far {
		if got := tl.Sum(count-1, count); got != 8 {
			t.Errorf("Sum of count %d = %d; want 8", count, got)
		}
	}
	if got, want := tl.Sum(0, MaxCounts), int64(8*len(far)); got != want {
		t.Errorf("Sum of all = %d; want %d", got, want)
	}
}

// TestEmptyTallyIsSmall: a run keeps a tally per post per worker per phase, most of them for posts
// whose likes fit one chunk; the fixed part must stay a small fraction of that chunk.
func TestEmptyTallyIsSmall(t *testing.T) {
	if size := unsafe.Sizeof(Tally{}); size > 1100 {
		t.Fatalf("an empty tally takes %d bytes; want at most 1100", size)
	}
}

func TestAddDoesNotAllocateOnceGrown(t *testing.T) {
	tl := New(0)
	tl.Add(1)
	if n := testing.AllocsPerRun(1000, func() { tl.Add(7) }); n != 0 {
		t.Fatalf("Add allocates %v; want 0", n)
	}
}

package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestIndexBoundsRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, 63, 64, 65, 127, 128, 1000, 999_999, 1 << 40, math.MaxInt64} {
		i := Index(v)
		if i < 0 || i >= Buckets {
			t.Fatalf("Index(%d) = %d; want within [0,%d)", v, i, Buckets)
		}
		lo, hi := Bounds(i)
		if v < lo || v > hi {
			t.Errorf("value %d in bucket %d [%d,%d]; want inside", v, i, lo, hi)
		}
		if v >= 64 && float64(hi-lo+1)/float64(lo) > 1.0/32+1e-9 {
			t.Errorf("bucket of %d is [%d,%d]; want width <= lo/32", v, lo, hi)
		}
	}
	// Buckets are contiguous and increasing.
	_, prevHi := Bounds(0)
	for i := 1; i < Buckets; i++ {
		lo, hi := Bounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d; want %d", i, lo, prevHi+1)
		}
		prevHi = hi
		if hi < 0 { // overflow past MaxInt64 at the top
			break
		}
	}
}

func TestQuantileMatchesExactWithinBucketError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	values := make([]int64, 100_000)
	for i := range values {
		values[i] = int64(r.ExpFloat64() * 2000) // microseconds, long tail
		h.Record(values[i])
	}
	slices.Sort(values)
	tests := []struct {
		give float64
	}{{0.5}, {0.9}, {0.99}, {0.999}}
	for _, tt := range tests {
		exact := float64(values[int(math.Ceil(tt.give*float64(len(values))))-1])
		got := h.Quantile(tt.give)
		if math.Abs(got-exact) > exact/32+1 {
			t.Errorf("Quantile(%v) = %v; want %v within 3%%", tt.give, got, exact)
		}
	}
}

func TestEmptyQuantileIsNaN(t *testing.T) {
	var h Histogram
	if got := h.Quantile(0.5); !math.IsNaN(got) {
		t.Fatalf("Quantile of empty = %v; want NaN", got)
	}
}

func TestSnapshotMergeConcurrent(t *testing.T) {
	var a Histogram
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				a.Record(int64(g*1000 + i))
			}
		})
	}
	wg.Wait()
	var b Histogram
	b.Merge(a.Snapshot())
	b.Merge(Sparse{{Buckets + 5, 7}}) // out of range: ignored
	if got := b.Count(); got != 4000 {
		t.Fatalf("merged count = %d; want 4000", got)
	}
	if got, want := b.Quantile(0.5), a.Quantile(0.5); got != want {
		t.Fatalf("merged median = %v; want %v", got, want)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(1000, func() { h.Record(12345) }); n != 0 {
		t.Fatalf("Record allocates %v times; want 0", n)
	}
}

package hist

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// subBits sets the precision: each power of two is split into 2^subBits buckets, so a recorded
// value is known to within 1/32 (about 3%) of itself, and values below 64 exactly.
const (
	subBits  = 5
	subCount = 1 << subBits
	// Buckets is the number of buckets; it covers every non-negative int64.
	Buckets = (64 - subBits) * subCount
)

// Histogram counts non-negative integer values (microseconds, here). The zero value is ready.
// Record may be called from many goroutines at once.
type Histogram struct {
	counts [Buckets]atomic.Uint64
}

// Index returns the bucket of v; negative values fall in bucket 0.
func Index(v int64) int {
	if v < 2*subCount {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits - 1
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// Bounds returns the smallest and largest value that fall in bucket i.
func Bounds(i int) (lo, hi int64) {
	if i < 2*subCount {
		return int64(i), int64(i)
	}
	shift := i/subCount - 1
	lo = int64(subCount+i%subCount) << shift
	return lo, lo + int64(1)<<shift - 1
}

// Record counts one value.
func (h *Histogram) Record(v int64) { h.counts[Index(v)].Add(1) }

// Snapshot returns the non-empty buckets as (index, count) pairs, the form that travels between
// processes.
func (h *Histogram) Snapshot() Sparse {
	var s Sparse
	for i := range h.counts {
		if n := h.counts[i].Load(); n > 0 {
			s = append(s, [2]uint64{uint64(i), n})
		}
	}
	return s
}

// Sparse is a histogram as its non-empty buckets, [index, count] each.
type Sparse [][2]uint64

// Merge adds s into h. Bucket indexes outside the histogram are ignored.
func (h *Histogram) Merge(s Sparse) {
	for _, b := range s {
		if b[0] < Buckets {
			h.counts[b[0]].Add(b[1])
		}
	}
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Quantile returns the value below which a share q (0..1) of the recorded values fall, as the
// middle of the bucket that holds it, or NaN when nothing was recorded.
func (h *Histogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(total)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, hi := Bounds(i)
			return float64(lo+hi) / 2
		}
	}
	lo, hi := Bounds(Buckets - 1)
	return float64(lo+hi) / 2
}

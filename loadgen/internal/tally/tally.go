package tally

import "sync/atomic"

const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits
	// MaxCounts is how many count values after the base one tally can hold (16M likes per post
	// per phase); events beyond it are counted in Overflow.
	MaxCounts = chunkLen * maxChunks
	maxChunks = 4096
)

type chunk [chunkLen]atomic.Int32

// Tally holds the deliveries of one post's counts base+1, base+2, ... Add may be called from many
// goroutines at once; memory grows by 16 KiB chunks only as far as counts go.
type Tally struct {
	base     int64
	chunks   [maxChunks]atomic.Pointer[chunk]
	Overflow atomic.Int64 // events with a count beyond MaxCounts after base
}

// New returns a tally for counts above base (the post's count before the likes to be measured).
func New(base int64) *Tally { return &Tally{base: base} }

// Base returns the count the tally starts after.
func (t *Tally) Base() int64 { return t.base }

// Add records one delivery of count. Counts at or below the base (snapshots, earlier phases) are
// ignored.
func (t *Tally) Add(count int64) {
	off := count - t.base - 1
	if off < 0 {
		return
	}
	if off >= MaxCounts {
		t.Overflow.Add(1)
		return
	}
	c := t.chunks[off>>chunkBits].Load()
	if c == nil {
		c = t.grow(off >> chunkBits)
	}
	c[off&(chunkLen-1)].Add(1)
}

func (t *Tally) grow(i int64) *chunk {
	fresh := new(chunk)
	if t.chunks[i].CompareAndSwap(nil, fresh) {
		return fresh
	}
	return t.chunks[i].Load()
}

// Sum returns the deliveries of counts in (lo, hi].
func (t *Tally) Sum(lo, hi int64) int64 {
	lo = max(lo, t.base)
	hi = min(hi, t.base+MaxCounts)
	var n int64
	for count := lo + 1; count <= hi; count++ {
		off := count - t.base - 1
		c := t.chunks[off>>chunkBits].Load()
		if c == nil {
			count += chunkLen - 1 - off&(chunkLen-1) // skip the rest of an empty chunk
			continue
		}
		n += int64(c[off&(chunkLen-1)].Load())
	}
	return n
}

package tally

import "sync/atomic"

// A tally's counts live in chunks of chunkLen counters, found through pages of pageLen chunk
// pointers, found through a directory of dirLen page pointers. Only the directory is fixed: a
// million-viewer run keeps one tally per post in each of its tens of worker processes, for each
// phase, so a flat table of chunk pointers (32 KiB a tally before any event) took gigabytes, while
// a phase's likes on one post usually fit in one chunk.
const (
	chunkBits = 10
	chunkLen  = 1 << chunkBits
	pageBits  = 7
	pageLen   = 1 << pageBits
	dirLen    = 1 << 7
	// MaxCounts is how many count values after the base one tally can hold (16M likes per post
	// per phase); events beyond it are counted in Overflow.
	MaxCounts = chunkLen * pageLen * dirLen
)

type (
	chunk [chunkLen]atomic.Int32
	page  [pageLen]atomic.Pointer[chunk]
)

// Tally holds the deliveries of one post's counts base+1, base+2, ... Add may be called from many
// goroutines at once; memory grows by 4 KiB chunks (and 1 KiB pages) only as far as counts go.
type Tally struct {
	base     int64
	dir      [dirLen]atomic.Pointer[page]
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
	c := t.chunk(off)
	if c == nil {
		c = t.grow(off)
	}
	c[off&(chunkLen-1)].Add(1)
}

// chunk returns the chunk holding offset off, nil when none was made.
func (t *Tally) chunk(off int64) *chunk {
	p := t.dir[off>>(chunkBits+pageBits)].Load()
	if p == nil {
		return nil
	}
	return p[(off>>chunkBits)&(pageLen-1)].Load()
}

// grow makes the chunk (and page) of offset off; of racing callers, the first one's wins.
func (t *Tally) grow(off int64) *chunk {
	slot := &t.dir[off>>(chunkBits+pageBits)]
	p := slot.Load()
	if p == nil {
		slot.CompareAndSwap(nil, new(page))
		p = slot.Load()
	}
	cs := &p[(off>>chunkBits)&(pageLen-1)]
	cs.CompareAndSwap(nil, new(chunk))
	return cs.Load()
}

// Sum returns the deliveries of counts in (lo, hi].
func (t *Tally) Sum(lo, hi int64) int64 {
	lo = max(lo, t.base)
	hi = min(hi, t.base+MaxCounts)
	var n int64
	for count := lo + 1; count <= hi; count++ {
		off := count - t.base - 1
		c := t.chunk(off)
		if c == nil {
			count += chunkLen - 1 - off&(chunkLen-1) // skip the rest of an empty chunk
			continue
		}
		n += int64(c[off&(chunkLen-1)].Load())
	}
	return n
}

package store

import "sync"

// chunkCache remembers the current likers chunk of the posts past their first, so that a batch
// names its post's current chunk keys at the first call (changeScript takes only declared keys). A
// post it does not know is taken to be in chunk 0, which holds for nearly every post (128
// likers); for a bigger one a wrong guess costs one call that the script sends back with the
// right number. It forgets everything when it grows past chunkCacheMax posts, rather than track
// which ones are old: each bigger post then relearns its chunk at the cost of that one call.
type chunkCache struct {
	mu sync.Mutex // held for a map access only, never across Redis I/O
	m  map[string]int64
}

// chunkCacheMax bounds the posts a writer remembers chunks of, about 6 MB of map at most.
const chunkCacheMax = 1 << 16

func (c *chunkCache) get(post string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[post]
}

func (c *chunkCache) set(post string, chunk int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if chunk <= 0 {
		delete(c.m, post)
		return
	}
	if _, known := c.m[post]; c.m == nil || !known && len(c.m) >= chunkCacheMax {
		c.m = make(map[string]int64)
	}
	c.m[post] = chunk
}

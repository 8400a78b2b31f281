package store

import "time"

// What the external tests of this directory reach inside the store for.
var (
	ChangeScript = changeScript
	Results      = results
)

// AgainUnliked is the script's code for a call it sends back for an unliking user's chunk.
const AgainUnliked = againUnliked

// CachedChunk is the likers chunk the store remembers for post (chunkCache).
func (s *Store) CachedChunk(post string) int64 { return s.chunks.get(post) }

// SetClockAhead makes s act as a writer whose clock runs d ahead of the true time.
func (s *Store) SetClockAhead(d time.Duration) { s.skew = d }

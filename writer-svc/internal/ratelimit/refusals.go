package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// refusals remembers, in this process, the keys Redis refused and until when: a key refused
// until t is refused here until t without asking Redis again. That is exact, not a guess: the
// bucket's next free slot (its TAT) only moves later, whatever other replicas count meanwhile, so
// Redis would refuse too. A flooding user or address then costs Redis one call per Retry-After
// per replica, not one per request. Other replicas, which have not seen the refusal, still ask
// Redis once each: the bucket stays one, shared.
//
// It is bounded: each of its stripes holds at most stripeCap keys; a full stripe first drops its
// expired keys and then arbitrary ones, an eighth of it, so a flood of distinct keys costs memory up to the
// bound and from then on only the Redis calls it would have cost without the memory.
type refusals struct {
	seed    maphash.Seed
	stripes [refusalStripes]refusalStripe
	now     func() time.Time
}

const (
	refusalStripes = 16   // lock stripes, so that request goroutines rarely meet
	stripeCap      = 4096 // keys per stripe: 65,536 refused keys in all, about 6 MiB at most
)

type refusalStripe struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func newRefusals() *refusals {
	r := &refusals{seed: maphash.MakeSeed(), now: time.Now}
	for i := range r.stripes {
		r.stripes[i].until = make(map[string]time.Time)
	}
	return r
}

func (r *refusals) stripe(key string) *refusalStripe {
	return &r.stripes[maphash.String(r.seed, key)%refusalStripes]
}

// wait returns how long key is still refused; 0 when Redis must be asked.
func (r *refusals) wait(key string) time.Duration {
	s := r.stripe(key)
	s.mu.Lock()
	until, ok := s.until[key]
	s.mu.Unlock()
	if !ok {
		return 0
	}
	return max(until.Sub(r.now()), 0)
}

// refuse records that Redis refused key for wait.
func (r *refusals) refuse(key string, wait time.Duration) {
	now := r.now()
	s := r.stripe(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.until[key]; !ok && len(s.until) >= stripeCap {
		for k, t := range s.until {
			if !t.After(now) {
				delete(s.until, k)
			}
		}
		for k := range s.until { // still full: make room for an eighth more, so sweeps are rare
			if len(s.until) < stripeCap-stripeCap/8 {
				break
			}
			delete(s.until, k)
		}
	}
	s.until[key] = now.Add(wait)
}

// size is how many keys are remembered (tests).
func (r *refusals) size() int {
	n := 0
	for i := range r.stripes {
		s := &r.stripes[i]
		s.mu.Lock()
		n += len(s.until)
		s.mu.Unlock()
	}
	return n
}

package ratelimit

import (
	"time"

	"github.com/likes/likes/writer-svc/internal/bounded"
)

// refusals remembers, in this process, the keys Redis refused and until when: a key refused
// until t is refused here until t without asking Redis again. That is exact, not a guess: the
// bucket's next free slot (its TAT) only moves later, whatever other replicas count meanwhile, so
// Redis would refuse too. A flooding user or address then costs Redis one call per Retry-After
// per replica, not one per request. Other replicas, which have not seen the refusal, still ask
// Redis once each: the bucket stays one, shared.
//
// It holds at most maxRefusals keys (bounded.Map), expired ones going first, so a flood of
// distinct keys costs memory up to the bound and from then on only the Redis calls it would have
// cost without the memory.
type refusals struct {
	until *bounded.Map[time.Time]
	now   func() time.Time
}

// maxRefusals bounds the keys remembered: about 6 MiB at most.
const maxRefusals = 65536

func newRefusals() *refusals {
	return &refusals{until: bounded.New[time.Time](maxRefusals), now: time.Now}
}

// wait returns how long key is still refused; 0 when Redis must be asked.
func (r *refusals) wait(key string) time.Duration {
	until, ok := r.until.Get(key)
	if !ok {
		return 0
	}
	return max(until.Sub(r.now()), 0)
}

// refuse records that Redis refused key for wait.
func (r *refusals) refuse(key string, wait time.Duration) {
	now := r.now()
	r.until.Put(key, now.Add(wait), func(t time.Time) bool { return !t.After(now) })
}

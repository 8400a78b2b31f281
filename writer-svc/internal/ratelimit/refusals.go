package ratelimit

import (
	"time"

	"github.com/likes/likes/writer-svc/internal/bounded"
)

// refusals remembers, in this process, the keys Redis refused and until when: a key refused
// until t is refused here until t without asking Redis again. Up to the bucket's own wait that is
// exact, not a guess: the bucket's theoretical arrival time (its TAT) only moves later, whatever
// other replicas count meanwhile, so Redis would refuse too; past it, t holds the key until its
// bucket has gathered a few tokens (hold). Once t has passed, heldTokens requests may ask Redis
// for the key, about the tokens gathered, and the others that come are refused here
// (refusedWhileAsking) until an answer refuses the key again (a new hold) or admitFor has passed
// (the key is then forgotten). A flooding user or address then costs Redis a call or two per
// few intervals per replica, however many requests it sends, not one per request. Other
// replicas, which have not seen the refusal, still ask Redis once each: the bucket stays one,
// shared.
//
// It holds at most maxRefusals keys (bounded.Map), expired ones going first, so a flood of
// distinct keys costs memory up to the bound and from then on only the Redis calls it would have
// cost without the memory.
type refusals struct {
	keys *bounded.Map[refusal]
	now  func() time.Time
}

// refusal is what is known of a key Redis refused.
type refusal struct {
	room     time.Time // when its bucket has room again: the Retry-After
	until    time.Time // refused here until then: room, and the hold past it
	admitted int       // requests let through to Redis since until
}

// maxRefusals bounds the keys remembered: about 8 MiB at most.
const maxRefusals = 65536

// admitFor is how long a key is remembered after its hold: while it is, at most heldTokens of
// its requests ask Redis.
const admitFor = maxHoldPast

// refusedWhileAsking is the wait given to a request that comes while others ask Redis for a key
// refused lately, or while the key is held past its bucket's room (a Retry-After rounds it up to
// a second).
const refusedWhileAsking = time.Millisecond

func newRefusals() *refusals {
	return &refusals{keys: bounded.New[refusal](maxRefusals), now: time.Now}
}

// begin returns how long key is still refused here; 0 when Redis must be asked, and then the
// caller must call end with Redis's answer.
func (r *refusals) begin(key string) (wait time.Duration) {
	now := r.now()
	r.keys.Update(key, func(k refusal, ok bool) (refusal, bool) {
		switch {
		case !ok: // never refused: ask, and remember nothing unless Redis refuses
			return k, false
		case k.until.After(now):
			wait = k.heldFor(now)
		case forgotten(k, now): // refused long enough ago: ask, and forget
			return k, false
		case k.admitted >= heldTokens:
			wait = refusedWhileAsking
		default:
			k.admitted++
		}
		return k, true
	}, r.stale(now))
	return wait
}

// refusedFor returns how long key is still refused here (0: not refused), without asking to ask,
// as begin counts it.
func (r *refusals) refusedFor(key string) time.Duration {
	k, ok := r.keys.Get(key)
	now := r.now()
	if !ok || !k.until.After(now) {
		return 0
	}
	return k.heldFor(now)
}

// heldFor is the wait told to a request for a key refused here at now: its bucket's own, or
// refusedWhileAsking once the bucket has room and the key is only held (hold).
func (k refusal) heldFor(now time.Time) time.Duration {
	return max(k.room.Sub(now), refusedWhileAsking)
}

// end records Redis's answer for key: its bucket has no room for wait (0: allowed, or Redis could
// not be asked), and the key is refused here for held (at least wait: Limiter.hold). An answer
// with room leaves a key refused lately as it is, so that its admissions stay counted.
func (r *refusals) end(key string, wait, held time.Duration) {
	now := r.now()
	r.keys.Update(key, func(k refusal, ok bool) (refusal, bool) {
		if wait > 0 {
			return refusal{room: now.Add(wait), until: now.Add(max(held, wait))}, true
		}
		return k, ok && !forgotten(k, now)
	}, r.stale(now))
}

// forgotten reports a refusal whose hold and admissions are over: begin and end drop it, and so
// does a full stripe (stale).
func forgotten(k refusal, now time.Time) bool { return !now.Before(k.until.Add(admitFor)) }

// stale is forgotten at now, for bounded.Map.
func (r *refusals) stale(now time.Time) func(refusal) bool {
	return func(k refusal) bool { return forgotten(k, now) }
}

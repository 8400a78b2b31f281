// Package likehistory records what clients did to the likes service while faults were injected,
// and checks the record the way Jepsen and etcd's robustness suite check theirs: every
// operation's call and return and its outcome, then porcupine's linearizability check of each
// post's history against a model of a set of users with a count (model.go).
//
// An operation ends in one of three outcomes: OK (the service answered and said what it did),
// Fail (a clear refusal, a 4xx or a 503: it promises the operation did not take effect), or
// Unknown (a timeout or a cut connection: it may or may not have). The model lets an Unknown
// operation take effect or not, and a Fail one never, so a lost acknowledged like, a refused
// like stored later, or a count out of step with its set all fail the check.
//
// It lives in the module's internal/: a test kit for the fault suites, not a library.
package likehistory

import (
	"sync"
	"time"
)

// Kind is what an operation did.
type Kind uint8

const (
	// Like is POST /like/{post} by User.
	Like Kind = iota
	// Unlike is DELETE /like/{post} by User.
	Unlike
	// Count is GET /count/{post}.
	Count
	// Likers reads the whole set of the post's likers (GET /likes/{post}/users, every page).
	Likers
)

func (k Kind) String() string {
	return [...]string{"like", "unlike", "count", "likers"}[k]
}

// Outcome is how an operation ended.
type Outcome uint8

const (
	// OK: answered with what it did.
	OK Outcome = iota
	// Fail: refused (a 4xx or a 503); it must not have taken effect.
	Fail
	// Unknown: no answer (a timeout, a cut connection); it may have taken effect.
	Unknown
)

func (o Outcome) String() string {
	return [...]string{"ok", "fail", "unknown"}[o]
}

// Op is one operation of a history.
type Op struct {
	Client     int // which client ran it: a client's operations never overlap
	Kind       Kind
	Post, User string
	Call, End  int64 // nanoseconds since the Recorder started; End is set by Record
	Outcome    Outcome
	Changed    bool     // Like with OK: the service said this like added the user ("liked": true); an unlike's answer does not say
	Count      int64    // Like, Unlike, Count with OK: the post's count the service answered
	Users      []string // Likers with OK: the set read
}

// Recorder collects a history from many clients at once.
type Recorder struct {
	epoch time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder starts a history now.
func NewRecorder() *Recorder { return &Recorder{epoch: time.Now()} }

// Now is the time to give an operation's Call, taken just before its request is sent.
func (r *Recorder) Now() int64 { return int64(time.Since(r.epoch)) }

// Record adds op, ended now (its answer was just read).
func (r *Recorder) Record(op Op) {
	op.End = r.Now()
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns the history so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

package likes

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// reactions makes a Load an audience reacting to its posts (WithReactions) instead of fresh users
// liking them.
type reactions struct {
	kinds    []string
	interval time.Duration
	audience atomic.Int64   // people, numbered 1..audience (SetAudience)
	mu       sync.Mutex     // guards lastAck's growth
	lastAck  []atomic.Int64 // per person (index = number - 1): unix microseconds of their last acknowledged reaction
}

// WithReactions makes the load an audience that reacts: each request is POST
// /react/{post}/{kind}, the kinds taken in turn, by the people of the audience in turn (SetAudience
// says how many), as a conference room taps emoji. A person reacts at most once per interval, the
// deployment's REACTION_INTERVAL: at a rate above audience / interval the writer would refuse the
// excess with 429, so a person whose last reaction was acknowledged less than interval ago waits
// for it to pass (their reaction's latency counts from when it fell due). Only the open loop
// (Open) reacts.
func WithReactions(kinds []string, interval time.Duration) Option {
	return func(l *Load) { l.react = &reactions{kinds: kinds, interval: interval} }
}

// SetAudience sets the people who react from the next Open on. It must not be called while the
// load runs.
func (l *Load) SetAudience(people int) {
	rx := l.react
	if rx == nil {
		return
	}
	people = max(people, 1)
	rx.mu.Lock()
	if people > len(rx.lastAck) {
		grown := make([]atomic.Int64, people)
		for i := range rx.lastAck {
			grown[i].Store(rx.lastAck[i].Load())
		}
		rx.lastAck = grown
	}
	rx.mu.Unlock()
	rx.audience.Store(int64(people))
}

// reactionHeads are the requests of every (post, kind) up to the part of the identity header
// that differs per person, indexed post*len(kinds)+kind.
func reactionHeads(path, host, identity string, posts, kinds []string) [][]byte {
	var heads [][]byte
	for _, post := range posts {
		for _, kind := range kinds {
			heads = append(heads, []byte("POST "+path+"/react/"+url.PathEscape(post)+"/"+url.PathEscape(kind)+
				" HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: 0\r\n"+identity))
		}
	}
	return heads
}

// assign makes the sent'th reaction of the run (counting from 0) a job: posts in turn, then kinds,
// and the people in turn, so each person's reactions are audience / rate apart.
func (rx *reactions) assign(j *job, sent, posts int) {
	j.kind = (sent / posts) % len(rx.kinds)
	j.seq = int64(sent%int(rx.audience.Load())) + 1
}

// gateMargin is added to a person's interval before their next reaction: the gate's expiry is
// judged on Redis's clock, in milliseconds and as cached at the script's start, which can be a
// millisecond or two behind ours; without it a person at exactly one reaction per interval is
// sometimes refused with "retry in 1ms".
const gateMargin = 10 * time.Millisecond

// wait sleeps until every person of batch may react again. A reaction that waited counts its
// latency from then: the wait is its person's pace, not the writer's.
func (rx *reactions) wait(batch []job) {
	var until int64
	for _, j := range batch {
		until = max(until, rx.lastAck[j.seq-1].Load()+(rx.interval+gateMargin).Microseconds())
	}
	d := time.Until(time.UnixMicro(until))
	if d <= 0 {
		return
	}
	time.Sleep(d)
	now := time.Now()
	for i := range batch {
		batch[i].start = now
	}
}

// acked records that person seq's reaction was acknowledged at end.
func (rx *reactions) acked(seq int64, end time.Time) { rx.lastAck[seq-1].Store(end.UnixMicro()) }

// The key scanReaction looks for besides "count".
var keyTS = []byte(`"ts"`)

var errNoTS = errors.New(`no "ts" number`)

// scanReaction reads "count" (the kind's count after the reaction) and "ts" (the version of the
// update that carries it) from a reaction's answer, {"post_id":"42","kind":"clap","count":13,"ts":...}.
func scanReaction(body []byte) (count, ts int64, err error) {
	count, ok := leadingInt(field(body, keyCount))
	if !ok {
		return 0, 0, errNoCount
	}
	if ts, ok = leadingInt(field(body, keyTS)); !ok {
		return 0, 0, errNoTS
	}
	return count, ts, nil
}

// judgeReaction turns a reaction's answer into its count and version, or its error.
func judgeReaction(a answer, body []byte) (count, ts int64, err error) {
	switch a.status {
	case http.StatusOK:
	case http.StatusTooManyRequests:
		return 0, 0, fmt.Errorf("status 429 (%.200s): the person reacted to the post less than the deployment's REACTION_INTERVAL "+
			"ago (loadgen's --react-interval must be at least it)", bytes.TrimSpace(body))
	case http.StatusUnauthorized:
		return 0, 0, errors.New("status 401: the writer refused the reaction's identity (see --identity)")
	default:
		return 0, 0, fmt.Errorf("status %d", a.status)
	}
	if count, ts, err = scanReaction(body); err != nil {
		return 0, 0, fmt.Errorf("decode answer: %w", err)
	}
	return count, ts, nil
}

package ackquorum

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options tune a Quorum.
type Options struct {
	// Every is how often each Sentinel is asked for the replicas (500 ms).
	Every time.Duration
	// Fresh is how long an answer counts (3 x Every): a Sentinel silent longer counts as not
	// reachable.
	Fresh time.Duration
	// OldPrimary is how long a primary that the Sentinels replaced is waited for even while they
	// call it down (DefaultOldPrimary).
	OldPrimary time.Duration
}

// DefaultOldPrimary covers the time Sentinel takes to turn an old primary that comes back into a
// replica: it waits four hello periods (8 s at Redis's default 2 s) first. Until then the old
// primary may still take writes from a writer that has not followed the failover, and its
// remaining replica could confirm them: a batch waits for it too, so it can confirm nothing.
const DefaultOldPrimary = 10 * time.Second

// Quorum asks the Sentinels for the primary's replicas and tells how many must confirm a batch.
type Quorum struct {
	sentinels []*redis.SentinelClient
	master    string
	o         Options
	now       func() time.Time

	mu      sync.Mutex
	views   []view               // by Sentinel
	listed  int                  // replicas listed at the last count a majority answered (0: none yet)
	primary string               // the primary a majority named last ("" : none yet)
	old     map[string]time.Time // primaries a majority replaced, waited for until then
}

// view is one Sentinel's last answer: each replica it lists, and whether it calls it down or
// reports its link to the primary down (a replica syncing after a restart, which could not
// confirm a like until it has caught up).
type view struct {
	at      time.Time
	primary string // host:port
	down    map[string]bool
}

// New returns a Quorum over sentinels, which watch master; Start starts asking them.
func New(sentinels []*redis.SentinelClient, master string, o Options) *Quorum {
	if o.Every <= 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Fresh <= 0 {
		o.Fresh = 3 * o.Every
	}
	if o.OldPrimary <= 0 {
		o.OldPrimary = DefaultOldPrimary
	}
	return &Quorum{sentinels: sentinels, master: master, o: o, now: time.Now, views: make([]view, len(sentinels)), old: map[string]time.Time{}}
}

// Replicas is how many replicas must confirm a batch now: those listed by the Sentinels that
// answered lately, less those a majority of all the Sentinels call down, when a majority
// answered and agrees on the primary; otherwise as many as were listed when a majority last did.
// A primary the majority replaced lately is never left out (OldPrimary). At least 1.
func (q *Quorum) Replicas() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	majority := len(q.views)/2 + 1
	answered := 0
	listed := map[string]int{} // replica -> Sentinels calling it down
	named := map[string]int{}  // primary -> Sentinels naming it
	for _, v := range q.views {
		if v.at.IsZero() || now.Sub(v.at) > q.o.Fresh {
			continue
		}
		answered++
		named[v.primary]++
		for name, down := range v.down {
			if down {
				listed[name]++
			} else if _, ok := listed[name]; !ok {
				listed[name] = 0
			}
		}
	}
	primary := ""
	for p, n := range named {
		if n >= majority {
			primary = p
		}
	}
	if answered < majority || primary == "" {
		return max(q.listed, 1)
	}
	if q.primary != "" && q.primary != primary {
		q.old[q.primary] = now.Add(q.o.OldPrimary)
	}
	q.primary = primary
	q.listed = len(listed)
	up := 0
	for name, downs := range listed {
		until, old := q.old[name]
		switch {
		case old && !now.Before(until):
			delete(q.old, name)
		case old && downs == 0:
			delete(q.old, name) // a replica now, and up: waited for as any other
		}
		if downs < majority || (old && now.Before(until)) {
			up++
		}
	}
	return max(up, 1)
}

// Start asks every Sentinel now and then every Every, until ctx ends or stop is called; stop
// waits for the goroutine to return.
func (q *Quorum) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	q.poll(ctx)
	done := make(chan struct{})
	go func() { // stopped by stop or ctx
		defer close(done)
		t := time.NewTicker(q.o.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				q.poll(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// poll asks every Sentinel at once, each within Every, and keeps the answers.
func (q *Quorum) poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, q.o.Every)
	defer cancel()
	var wg sync.WaitGroup
	for i, s := range q.sentinels {
		wg.Add(1)
		go func() { // returns within the poll's timeout
			defer wg.Done()
			primary, err := s.GetMasterAddrByName(ctx, q.master).Result()
			if err != nil || len(primary) != 2 {
				return
			}
			replicas, err := s.Replicas(ctx, q.master).Result()
			if err != nil {
				return
			}
			v := view{at: q.now(), primary: net.JoinHostPort(primary[0], primary[1]), down: make(map[string]bool, len(replicas))}
			for _, r := range replicas {
				v.down[r["name"]] = calledDown(r["flags"]) || r["master-link-status"] == "err"
			}
			q.mu.Lock()
			q.views[i] = v
			q.mu.Unlock()
		}()
	}
	wg.Wait()
}

// calledDown reports a Sentinel's flags of a replica that say it is down (subjectively: for
// replicas Sentinel has no objective state).
func calledDown(flags string) bool {
	for f := range strings.SplitSeq(flags, ",") {
		if f == "s_down" || f == "o_down" {
			return true
		}
	}
	return false
}

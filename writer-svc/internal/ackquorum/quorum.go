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
}

// Quorum asks the Sentinels for the primary's replicas and tells how many must confirm a batch.
type Quorum struct {
	sentinels []*redis.SentinelClient
	node      redis.Cmdable // the writer's own client: which node its batches reach
	master    string
	o         Options
	now       func() time.Time

	mu     sync.Mutex
	views  []view // by Sentinel
	listed int    // replicas listed at the last count a majority answered (0: none yet)
	runID  string // the run id of the node the writer's client reached at the last poll
	// known is the run id a Sentinel last gave for each node's address (host:port), primary or
	// replica: right after a failover a Sentinel names the promoted node by address alone (its
	// entry for the new primary is new, and gets the run id only once the Sentinel's link to it
	// is up and has read its INFO, seconds later), and a promoted replica keeps its run id.
	known map[string]string
}

// view is one Sentinel's last answer: each replica it lists, and whether it calls it down or
// reports its link to the primary down (a replica syncing after a restart, which could not
// confirm a like until it has caught up).
type view struct {
	at      time.Time
	primary string // the run id of the primary it names
	down    map[string]bool
}

// New returns a Quorum over sentinels, which watch master, for the writer whose client to the
// primary is node; Start starts asking them.
func New(sentinels []*redis.SentinelClient, master string, node redis.Cmdable, o Options) *Quorum {
	if o.Every <= 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Fresh <= 0 {
		o.Fresh = 3 * o.Every
	}
	return &Quorum{
		sentinels: sentinels, node: node, master: master, o: o, now: time.Now,
		views: make([]view, len(sentinels)), known: map[string]string{},
	}
}

// Replicas is how many replicas must confirm a batch now: those listed by the Sentinels that
// answered lately and name the majority's primary, less those a majority of all the Sentinels
// call down, when a majority answered and names as the primary the node this writer's client
// reaches; otherwise as many as were listed when a majority last did. The second condition
// covers a writer still on an old primary that the Sentinels replaced (a partition just healed:
// Sentinel turns an old primary into a replica only after four hello periods, 8 s by default):
// the majority calls that node down as a replica of the new primary, and without it its last
// replica alone would confirm writes that the failover has already discarded. At least 1.
func (q *Quorum) Replicas() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	majority := len(q.views)/2 + 1
	answered := 0
	named := map[string]int{} // primary -> Sentinels naming it
	for _, v := range q.views {
		if q.fresh(v, now) {
			answered++
			named[v.primary]++
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
	listed := map[string]int{} // replica -> Sentinels calling it down
	for _, v := range q.views {
		if !q.fresh(v, now) || v.primary != primary {
			continue // a Sentinel that has not heard of a failover yet lists the old primary's replicas
		}
		for name, down := range v.down {
			if down {
				listed[name]++
			} else if _, ok := listed[name]; !ok {
				listed[name] = 0
			}
		}
	}
	q.listed = len(listed)
	if primary != q.runID {
		return max(q.listed, 1)
	}
	up := 0
	for _, downs := range listed {
		if downs < majority {
			up++
		}
	}
	return max(up, 1)
}

// fresh reports whether v is an answer recent enough to count at now.
func (q *Quorum) fresh(v view, now time.Time) bool {
	return !v.at.IsZero() && now.Sub(v.at) <= q.o.Fresh
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

// poll asks every Sentinel at once, and the writer's node its run id, each within Every, and
// keeps the answers.
func (q *Quorum) poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, q.o.Every)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // returns within the poll's timeout
		defer wg.Done()
		id := ""
		if info, err := q.node.Info(ctx, "server").Result(); err == nil {
			id = field(info, "run_id")
		}
		q.mu.Lock()
		q.runID = id
		q.mu.Unlock()
	}()
	for i, s := range q.sentinels {
		wg.Add(1)
		go func() { // returns within the poll's timeout
			defer wg.Done()
			primary, err := s.Master(ctx, q.master).Result()
			if err != nil {
				return
			}
			replicas, err := s.Replicas(ctx, q.master).Result()
			if err != nil {
				return
			}
			q.see(i, primary, replicas)
		}()
	}
	wg.Wait()
}

// maxKnown bounds Quorum.known: nodes that come back under new addresses (Pods, containers) leave
// old entries behind, and forgetting them all costs at most a failover's wait for the run id.
const maxKnown = 256

// see keeps Sentinel i's answer, SENTINEL MASTER's primary and SENTINEL REPLICAS' replicas, as
// its view. A primary named without a run id takes the one last given for its address; with
// none known the answer is dropped, as if the Sentinel had not answered.
func (q *Quorum) see(i int, primary map[string]string, replicas []map[string]string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.known) > maxKnown {
		clear(q.known)
	}
	for _, r := range replicas {
		if r["runid"] != "" {
			q.known[net.JoinHostPort(r["ip"], r["port"])] = r["runid"]
		}
	}
	at := net.JoinHostPort(primary["ip"], primary["port"])
	id := primary["runid"]
	if id != "" {
		q.known[at] = id
	} else if id = q.known[at]; id == "" {
		return
	}
	v := view{at: q.now(), primary: id, down: make(map[string]bool, len(replicas))}
	for _, r := range replicas {
		v.down[r["name"]] = calledDown(r["flags"]) || r["master-link-status"] == "err"
	}
	q.views[i] = v
}

// field returns the value of name in an INFO reply ("" when absent).
func field(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), name+":"); ok {
			return v
		}
	}
	return ""
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

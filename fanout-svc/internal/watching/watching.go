package watching

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/update"
)

// Local is the node's own view: the posts it has viewers of. The registry of posts (package posts)
// implements it.
type Local interface {
	// ExistingViewers calls fn once for each post with local viewers that exists (has a version:
	// someone liked or reacted to it). A post that does not exist is not counted: its key would
	// be Redis memory that anyone could make grow by watching made-up posts. fn must not block.
	ExistingViewers(fn func(post string, viewers int))
}

// Sink takes the totals; the hub implements it. PublishWatching must not block.
type Sink interface {
	PublishWatching(w update.Watching)
}

// Config tunes the counter.
type Config struct {
	Interval time.Duration // length of one interval; must be positive
	Batch    int           // posts per pipeline round trip; 0: 1000
	Timeout  time.Duration // bound of one round trip; 0: half the interval
}

// Stats are the counter's figures for /metrics.
type Stats struct {
	Ticks     atomic.Int64 // intervals handled
	Posts     atomic.Int64 // posts that exist with local viewers in the last interval
	Reports   atomic.Int64 // (post, interval) numbers added to Redis
	Published atomic.Int64 // totals handed to the sink
	Errors    atomic.Int64 // round trips or commands that failed
}

// Counter writes the node's per-post viewer numbers and reads the totals, once per interval.
type Counter struct {
	cfg    Config
	client redis.UniversalClient
	keys   rediskeys.Scheme
	local  Local
	sink   Sink
	log    *zap.Logger
	stats  Stats

	// Owned by Run's goroutine.
	written int64       // newest interval this node added to
	posts   []localPost // this tick's posts, reused
}

type localPost struct {
	id      string
	viewers int64
}

// New returns a counter; Run does the work.
//
// A node adds to an interval at most once, but the client under it may retry a pipeline whose
// connection failed after Redis ran it (go-redis does, after a network error): that interval
// then counts the node's viewers twice. The next interval is exact again, which for a "watching
// now" number is better than giving up on retries that usually repair a lost connection.
func New(cfg Config, client redis.UniversalClient, keys rediskeys.Scheme, local Local, sink Sink, log *zap.Logger) (*Counter, error) {
	if cfg.Interval <= 0 {
		return nil, errors.New("watching interval must be positive")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = cfg.Interval / 2
	}
	return &Counter{cfg: cfg, client: client, keys: keys, local: local, sink: sink, log: log}, nil
}

// Stats returns the counter's figures.
func (c *Counter) Stats() *Stats { return &c.stats }

// Run reports and reads once per interval, a quarter of the way into each, until ctx is done.
func (c *Counter) Run(ctx context.Context) {
	t := time.NewTimer(c.untilNextTick(time.Now()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.tick(ctx, time.Now())
		t.Reset(c.untilNextTick(time.Now()))
	}
}

// untilNextTick returns the time from now to the next instant a quarter into an interval. Ticks
// are placed on the wall clock, not spaced from the previous one, so that every node ticks at the
// same moments (to within their clocks' difference) and a slow tick does not shift the next.
func (c *Counter) untilNextTick(now time.Time) time.Duration {
	iv := int64(c.cfg.Interval)
	phase := iv / 4
	ns := now.UnixNano()
	next := (ns-phase)/iv*iv + iv + phase
	return time.Duration(next - ns)
}

// tick adds this node's numbers to the current interval and reads the previous interval's totals.
func (c *Counter) tick(ctx context.Context, now time.Time) {
	c.stats.Ticks.Add(1)
	iv := int64(c.cfg.Interval)
	current := now.UnixNano() / iv
	// A node adds to an interval at most once, even if its timer fired twice in it (the clock was
	// set back): adding twice would count its viewers twice.
	write := current > c.written
	if write {
		c.written = current
	}
	c.posts = c.posts[:0]
	c.local.ExistingViewers(func(post string, viewers int) {
		c.posts = append(c.posts, localPost{post, int64(viewers)})
	})
	c.stats.Posts.Store(int64(len(c.posts)))
	ts := (current - 1) * iv / int64(time.Microsecond)
	for start := 0; start < len(c.posts); start += c.cfg.Batch {
		batch := c.posts[start:min(start+c.cfg.Batch, len(c.posts))]
		c.exchange(ctx, batch, current, write, ts)
	}
}

// exchange runs one pipeline for batch: INCRBY and PEXPIRE of the current interval's key (when
// write), GET of the previous one. On a Redis Cluster, go-redis sends each master the commands
// of the slots it owns in one round trip; a post's keys share its hash slot.
func (c *Counter) exchange(ctx context.Context, batch []localPost, current int64, write bool, ts int64) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	ttl := 3 * c.cfg.Interval
	reads := make([]*redis.StringCmd, len(batch))
	cmds, _ := c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, lp := range batch {
			if write {
				key := c.keys.Watching(lp.id, current)
				p.IncrBy(ctx, key, lp.viewers)
				p.PExpire(ctx, key, ttl)
			}
			reads[i] = p.Get(ctx, c.keys.Watching(lp.id, current-1))
		}
		return nil
	})
	if err := firstError(cmds); err != nil {
		c.stats.Errors.Add(1)
		if ce := c.log.Check(zap.DebugLevel, "watching round trip"); ce != nil {
			ce.Write(zap.Error(err), zap.Int("posts", len(batch)))
		}
	} else if write {
		c.stats.Reports.Add(int64(len(batch)))
	}
	for i, lp := range batch {
		n, ok := total(reads[i])
		if !ok {
			continue
		}
		c.stats.Published.Add(1)
		c.sink.PublishWatching(update.Watching{PostID: lp.id, Watching: n, TS: ts})
	}
}

// firstError returns the first failure among cmds; a missing key (redis.Nil) is an answer.
func firstError(cmds []redis.Cmder) error {
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// total reads one GET's answer. A missing key means no node had viewers of the post in the
// previous interval (ours are new): nothing is known yet, so nothing is published. A failed
// command was counted with its round trip.
func total(cmd *redis.StringCmd) (int64, bool) {
	s, err := cmd.Result()
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

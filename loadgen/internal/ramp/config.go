package ramp

import (
	"errors"
	"fmt"
	"time"

	"github.com/likes/likes/loadgen/internal/slo"
)

// Config is a validated ramp.
type Config struct {
	Writer        string   // writer-svc base URL
	WriterMetrics []string // each writer replica's base URL, for its /metrics (empty: Writer's)
	Nodes         []string // fanout-svc base URLs, one per node
	Conns         []int    // viewers per phase, increasing
	Posts         int
	Feed          int    // posts each viewer follows on one stream (0 or 1: single-post streams)
	Redis         string // redis host:port (of a Cluster: any node) whose CPU and subscriptions the phases report; "" = not read
	// RedisSentinels, instead of Redis, name the Sentinels that say which node is the primary
	// whose CPU and subscriptions the phases report, followed across a failover.
	RedisSentinels      []string
	RedisSentinelMaster string
	// RedisUsername and RedisPassword are the user the readings connect as (to the Sentinels too).
	RedisUsername, RedisPassword string
	PostPrefix                   string // post ids are PostPrefix-0, PostPrefix-1, ...
	UserPrefix                   string // user ids are UserPrefix<n> (IdentityBench: sessiontoken.BenchUserPrefix first)
	// Identity is how a like names its user: IdentityBench, IdentitySession or IdentityHeader.
	Identity string
	// BenchKeyFile holds the benchmark key (IdentityBench).
	BenchKeyFile string
	// SessionKeyRotate is the deployment's SESSION_KEY_ROTATE, which names its session keys.
	SessionKeyRotate time.Duration
	Writers          int     // closed-loop writers (when Rate is 0)
	Rate             float64 // open-loop likes per second (0: closed loop)
	Warmup, Window   time.Duration
	Sources          []string // local source addresses for viewers
	MaxConnectRate   float64  // new viewers per second (0: unlimited)
	PerWorker        int      // viewers per worker process
	ReadBuffer       int      // bytes per read(2) (one buffer per worker loop)
	ConnectTimeout   time.Duration
	LikeTimeout      time.Duration
	ConvergeTimeout  time.Duration
	MaxInflight      int // open loop: likes in flight at most
	// LatencySample is how many viewers, over all workers, keep the arrival of every frame: where
	// a phase is judged by what the nodes displayed (reactions, or a display rate that held
	// frames back), the latency from each acknowledgement to the first frame at them that
	// includes it is measured on them.
	LatencySample int
	// React makes the load an audience reacting instead of fresh users liking; nil: likes.
	React *React
	// Storm loses a node in the first phase's window; nil: none.
	Storm *Storm
	// OneLike likes the first post once after the last phase, its viewers still open, and reports
	// when each of them had it (Result.OneLike).
	OneLike bool
	// WriteProbe is a rate of likes to posts no viewer watches, sent before any viewer connects
	// (Result.ProbeAlone) and beside every phase's likes (Phase.Probe): the writer's cost per like
	// with the viewers fed against none. 0: no probe.
	WriteProbe float64
	// Objective judges every phase; with Search the ramp grows the load until a phase breaks it.
	Objective   slo.Objective
	Search      *Search // --until-break; nil: one phase per Conns
	RedisPrefix string  // key and channel prefix of the deployment (for PUBSUB NUMSUB)

	// WorkerExe and WorkerArgs start one worker process (normally this binary, "worker").
	WorkerExe  string
	WorkerArgs []string
	Command    string // the command line, for the report
}

// React is a reactions ramp (--react): a room's audience taps emoji at a total rate, each person
// at most once per Interval, and each phase measures what every viewer's display got.
type React struct {
	Kinds    []string      // the deployment's REACTION_KINDS, taken in turn
	Interval time.Duration // the deployment's REACTION_INTERVAL
	// Audience is the people reacting; 0: as many as the phase's viewers (everyone in the room
	// reacts).
	Audience int
}

// Storm is a node's loss (--kill-cmd): Command (run by sh -c) kills a node After into the first
// phase's window, and every viewer whose stream ends reconnects at once to another node.
type Storm struct {
	Command string
	After   time.Duration
}

// people returns the audience of a phase of conns viewers.
func (x *React) people(conns int) int {
	if x.Audience > 0 {
		return x.Audience
	}
	return max(conns, 1)
}

// ceiling is the most reactions a second people can send: each once per interval.
func (x *React) ceiling(people int) float64 { return float64(people) / x.Interval.Seconds() }

// How a like names its fresh user (--identity).
const (
	// IdentitySession: a session token for the user, signed with the deployment's key, which
	// loadgen reads from (or, first in a period, creates in) Redis as a writer does; as a browser's
	// likes reach a writer that trusts no X-User-ID, through a balancer that strips it.
	IdentitySession = "session"
	// IdentityHeader: X-User-ID, for a writer run with TRUST_USER_HEADER=true.
	IdentityHeader = "header"
	// IdentityBench: a session token for a benchmark user (sessiontoken.BenchUserPrefix), signed
	// with the benchmark key that the writers accept with BENCH_SESSION_KEY_FILE: no access to
	// the deployment's own signing keys, which its Redis keeps from everyone but the writers.
	IdentityBench = "bench"
)

// Validate reports the first thing wrong with c.
func (c *Config) Validate() error {
	switch {
	case c.Writer == "":
		return errors.New("--writer is required")
	case len(c.Nodes) == 0:
		return errors.New("--fanout names no node")
	case len(c.Conns) == 0:
		return errors.New("--conns names no phase")
	case c.Posts < 1:
		return errors.New("--posts must be at least 1")
	case c.Rate < 0:
		return errors.New("--rate must not be negative")
	case c.Rate == 0 && c.Writers < 1 && c.React == nil:
		return errors.New("--writers must be at least 1 (or set --rate)")
	case c.Window <= 0 || c.Warmup < 0:
		return errors.New("--window must be positive and --warmup not negative")
	case c.Feed < 0 || c.Feed > 64 || c.Feed > c.Posts:
		return errors.New("--feed must be 0-64 and at most --posts")
	case c.LatencySample < 0:
		return errors.New("--latency-sample must not be negative")
	case c.PerWorker < 1:
		return errors.New("viewers per worker must be at least 1")
	case c.Redis != "" && len(c.RedisSentinels) > 0:
		return errors.New("--redis and --redis-sentinels both name the Redis to read: set one")
	case len(c.RedisSentinels) > 0 && c.RedisSentinelMaster == "":
		return errors.New("--redis-sentinel-master is required with --redis-sentinels")
	case c.Identity != IdentitySession && c.Identity != IdentityHeader && c.Identity != IdentityBench:
		return fmt.Errorf("--identity: %q is none of %s, %s, %s", c.Identity, IdentityBench, IdentitySession, IdentityHeader)
	case c.Identity == IdentityBench && c.BenchKeyFile == "":
		return errors.New("--identity bench needs --bench-key-file (LOADGEN_BENCH_KEY_FILE): the key the writers accept with BENCH_SESSION_KEY_FILE")
	case c.Identity == IdentitySession && c.Redis == "" && len(c.RedisSentinels) == 0:
		return errors.New("--identity session (the default) signs each like's session token with the deployment's key, kept in Redis: " +
			"set --redis or --redis-sentinels (LOADGEN_REDIS, LOADGEN_REDIS_SENTINEL_ADDRS), " +
			"or use --identity header (LOADGEN_IDENTITY=header) against writers run with TRUST_USER_HEADER=true")
	case c.Identity == IdentitySession && (c.SessionKeyRotate < time.Second || c.SessionKeyRotate%time.Second != 0):
		return errors.New("--session-key-rotate must be whole seconds, at least 1s (the deployment's SESSION_KEY_ROTATE)")
	}
	if st := c.Storm; st != nil && (st.After < 0 || st.After >= c.Window) {
		return errors.New("--kill-after must lie within --window")
	}
	if c.WriteProbe < 0 || (c.WriteProbe > 0 && c.React != nil) {
		return errors.New("--write-probe must not be negative, and probes likes, not --react")
	}
	if c.OneLike && (c.React != nil || c.Conns[len(c.Conns)-1] < 1) {
		return errors.New("--one-like likes the first post once at the last phase's viewers: it needs viewers (--conns above 0), and likes, not --react")
	}
	if x := c.React; x != nil {
		switch {
		case len(x.Kinds) == 0:
			return errors.New("--react-kinds names no kind")
		case x.Interval < time.Millisecond:
			return errors.New("--react-interval must be at least 1ms (the deployment's REACTION_INTERVAL)")
		case c.Feed > 1:
			return errors.New("--react measures single-post streams (a room is one post): --feed must be 0")
		case x.Audience < 0:
			return errors.New("--audience must not be negative")
		}
	}
	if c.Search != nil {
		return c.Search.validate(c)
	}
	prev := -1 // a first phase of 0 viewers measures the writers alone
	for _, n := range c.Conns {
		if n <= prev {
			return fmt.Errorf("--conns must be increasing, from 0 or more: %v", c.Conns)
		}
		prev = n
	}
	return nil
}

// Mode describes the write load.
func (c *Config) Mode() string {
	if x := c.React; x != nil {
		who := "everyone in the room"
		if x.Audience > 0 {
			who = fmt.Sprintf("an audience of %d", x.Audience)
		}
		rate := "at the ceiling (each person once per interval)"
		if c.Rate > 0 {
			rate = fmt.Sprintf("%g reactions/s", c.Rate)
		}
		return fmt.Sprintf("reactions, open loop, %s by %s, at most one each per %v", rate, who, x.Interval)
	}
	if c.Rate > 0 {
		return fmt.Sprintf("open loop, %g likes/s", c.Rate)
	}
	return fmt.Sprintf("closed loop, %d writers", c.Writers)
}

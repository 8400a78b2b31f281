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
	PostPrefix          string // post ids are PostPrefix-0, PostPrefix-1, ...
	UserPrefix          string // user ids are UserPrefix<n>
	// Identity is how a like names its user: IdentitySession or IdentityHeader.
	Identity string
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
	// Objective judges every phase; with Search the ramp grows the load until a phase breaks it.
	Objective   slo.Objective
	Search      *Search // --until-break; nil: one phase per Conns
	RedisPrefix string  // key and channel prefix of the deployment (for PUBSUB NUMSUB)

	// WorkerExe and WorkerArgs start one worker process (normally this binary, "worker").
	WorkerExe  string
	WorkerArgs []string
	Command    string // the command line, for the report
}

// How a like names its fresh user (--identity).
const (
	// IdentitySession: a session token for the user, signed with the deployment's key, which
	// loadgen reads from (or, first in a period, creates in) Redis as a writer does; as a browser's
	// likes reach a writer that trusts no X-User-ID, through a balancer that strips it.
	IdentitySession = "session"
	// IdentityHeader: X-User-ID, for a writer run with TRUST_USER_HEADER=true.
	IdentityHeader = "header"
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
	case c.Rate == 0 && c.Writers < 1:
		return errors.New("--writers must be at least 1 (or set --rate)")
	case c.Window <= 0 || c.Warmup < 0:
		return errors.New("--window must be positive and --warmup not negative")
	case c.Feed < 0 || c.Feed > 64 || c.Feed > c.Posts:
		return errors.New("--feed must be 0-64 and at most --posts")
	case c.PerWorker < 1:
		return errors.New("viewers per worker must be at least 1")
	case c.Redis != "" && len(c.RedisSentinels) > 0:
		return errors.New("--redis and --redis-sentinels both name the Redis to read: set one")
	case len(c.RedisSentinels) > 0 && c.RedisSentinelMaster == "":
		return errors.New("--redis-sentinel-master is required with --redis-sentinels")
	case c.Identity != IdentitySession && c.Identity != IdentityHeader:
		return fmt.Errorf("--identity: %q is neither %s nor %s", c.Identity, IdentitySession, IdentityHeader)
	case c.Identity == IdentitySession && c.Redis == "" && len(c.RedisSentinels) == 0:
		return errors.New("--identity session (the default) signs each like's session token with the deployment's key, kept in Redis: " +
			"set --redis or --redis-sentinels (LOADGEN_REDIS, LOADGEN_REDIS_SENTINEL_ADDRS), " +
			"or use --identity header (LOADGEN_IDENTITY=header) against writers run with TRUST_USER_HEADER=true")
	case c.Identity == IdentitySession && (c.SessionKeyRotate < time.Second || c.SessionKeyRotate%time.Second != 0):
		return errors.New("--session-key-rotate must be whole seconds, at least 1s (the deployment's SESSION_KEY_ROTATE)")
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
	if c.Rate > 0 {
		return fmt.Sprintf("open loop, %g likes/s", c.Rate)
	}
	return fmt.Sprintf("closed loop, %d writers", c.Writers)
}

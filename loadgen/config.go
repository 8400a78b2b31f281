package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/likes/likes/loadgen/internal/ramp"
	"github.com/likes/likes/loadgen/internal/slo"
	"github.com/likes/likes/pkg/envflag"
	"github.com/likes/likes/pkg/sessiontoken"
)

// outputs are where the result goes besides the progress line.
type outputs struct {
	json      bool
	csv, html string
}

// maxSources bounds a --sources range.
const maxSources = 1 << 16

// loadConfig reads the ramp's flags (with environment defaults) into a validated ramp.Config.
func loadConfig(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) (ramp.Config, outputs, error) {
	var (
		cfg                     ramp.Config
		out                     outputs
		fanout, conns, sources  []string
		writerMetrics           []string
		maxConnectRate          float64
		postPrefix, objective   string
		untilBreak              bool
		grow, redisPasswordFile string
		search                  ramp.Search
		react                   bool
		reactCfg                ramp.React
		storm                   ramp.Storm
	)
	run := strconv.FormatInt(time.Now().Unix(), 36)
	set := envflag.New("loadgen ramp", getenv, stderr)
	set.String(&cfg.Writer, "writer", "LOADGEN_WRITER", "http://127.0.0.1:8080", "writer-svc base URL")
	set.List(&writerMetrics, "writer-metrics", "LOADGEN_WRITER_METRICS", "",
		"writer-svc replicas whose /metrics give the writers' CPU, when --writer is a balancer that does not pass /metrics; comma-separated, or one URL whose host resolves to several addresses")
	set.List(&fanout, "fanout", "LOADGEN_FANOUT", "http://127.0.0.1:8090",
		"fanout-svc base URLs, comma-separated, or one URL whose host resolves to several addresses (one node each)")
	set.List(&conns, "conns", "LOADGEN_CONNS", "2000,10000,20000,64000", "viewers per phase, increasing, comma-separated; a phase of 0 drives the writers alone (no viewer figures)")
	set.Int(&cfg.Posts, "posts", "LOADGEN_POSTS", 10, "posts; viewer i watches post i mod posts")
	set.Int(&cfg.Feed, "feed", "LOADGEN_FEED", 0,
		"posts each viewer follows on one /sse?posts= stream (a feed): post i mod posts and the next feed-1; 0 = one post per stream")
	set.String(&cfg.Redis, "redis", "LOADGEN_REDIS", "",
		"redis-server host:port (of a Cluster: any node) whose CPU per like and subscribers per post each phase reports; empty = not read")
	set.List(&cfg.RedisSentinels, "redis-sentinels", "LOADGEN_REDIS_SENTINEL_ADDRS", "",
		"Sentinels (host:port, comma-separated) that name the primary whose CPU per like and subscribers per post each phase reports, followed across a failover; instead of --redis")
	set.String(&cfg.RedisSentinelMaster, "redis-sentinel-master", "LOADGEN_REDIS_SENTINEL_MASTER", "mymaster", "with --redis-sentinels: the monitored primary's name (REDIS_SENTINEL_MASTER)")
	set.String(&cfg.RedisPrefix, "redis-prefix", "LOADGEN_REDIS_PREFIX", "likes:", "the deployment's REDIS_PREFIX (names the posts' channels and the session keys)")
	set.String(&redisPasswordFile, "redis-password-file", "LOADGEN_REDIS_PASSWORD_FILE", "", "file holding the password of --redis-username")
	set.String(&cfg.RedisUsername, "redis-username", "LOADGEN_REDIS_USERNAME", "", "the Redis ACL user the readings connect as, to Redis and its Sentinels (a deployment's read-only monitor user)")
	set.String(&cfg.Identity, "identity", "LOADGEN_IDENTITY", ramp.IdentitySession,
		"how each like names its fresh user: bench (a session token for a benchmark user, bench-..., signed with --bench-key-file's key, which the writers accept with BENCH_SESSION_KEY_FILE: what a deployment whose Redis keeps its session keys from loadgen uses), "+
			"session (signed with the deployment's own session key, read from the Redis of --redis or --redis-sentinels, which it needs) "+
			"or header (X-User-ID, believed only by writers run with TRUST_USER_HEADER=true)")
	set.String(&cfg.BenchKeyFile, "bench-key-file", "LOADGEN_BENCH_KEY_FILE", "", "with --identity bench: a file holding the key of the writers' BENCH_SESSION_KEY_FILE (at least 32 bytes; surrounding white space is ignored)")
	set.Duration(&cfg.SessionKeyRotate, "session-key-rotate", "LOADGEN_SESSION_KEY_ROTATE", sessiontoken.DefaultKeyRotate,
		"with --identity session: the deployment's SESSION_KEY_ROTATE, which names its session keys")
	set.String(&objective, "slo", "LOADGEN_SLO", slo.Default,
		"service level objective every phase is judged by: p50/p99/p999 (delivery) and like_p99 <= a duration, delivery and converged >= a percentage, errors (likes failed or skipped, viewers failed, refused or dropped) = a count")
	set.Bool(&untilBreak, "until-break", "LOADGEN_UNTIL_BREAK", false,
		"grow the load from the first --conns and --rate until a step breaks --slo, narrow down, and report the last clean step as the capacity")
	set.String(&grow, "grow", "LOADGEN_GROW", "conns", "with --until-break: what grows, conns (viewers at a fixed --rate) or rate (likes/s at fixed --conns)")
	set.Float(&search.Factor, "grow-factor", "LOADGEN_GROW_FACTOR", 2, "with --until-break: load multiplier per step until the first break")
	set.Float(&search.Precision, "precision", "LOADGEN_PRECISION", 0.1, "with --until-break: stop when the broken load is within this fraction above the clean one")
	set.Int(&search.MaxSteps, "max-steps", "LOADGEN_MAX_STEPS", 12, "with --until-break: most steps")
	set.Duration(&search.MaxTime, "max-time", "LOADGEN_MAX_TIME", 20*time.Minute, "with --until-break: no step starts that would end after this")
	set.Bool(&react, "react", "LOADGEN_REACT", false,
		"react instead of like: an audience taps --react-kinds on the posts (POST /react/{post}/{kind}), each person at most once per --react-interval, "+
			"at --rate reactions/s (0: the room's ceiling, audience / interval); latency is from a reaction's acknowledgement to the first frame at a viewer that includes it")
	set.List(&reactCfg.Kinds, "react-kinds", "LOADGEN_REACT_KINDS", "heart,clap,laugh,wow,fire", "with --react: the deployment's REACTION_KINDS, taken in turn")
	set.Duration(&reactCfg.Interval, "react-interval", "LOADGEN_REACT_INTERVAL", 3*time.Second, "with --react: the deployment's REACTION_INTERVAL (one reaction per person and post per interval)")
	set.Int(&reactCfg.Audience, "audience", "LOADGEN_AUDIENCE", 0, "with --react: people reacting; 0 = as many as the phase's viewers (everyone in the room)")
	set.Int(&cfg.LatencySample, "latency-sample", "LOADGEN_LATENCY_SAMPLE", 50,
		"viewers that keep the arrival of every frame: a reactions phase, or one whose nodes' display rate held frames back, measures on them "+
			"the latency from each acknowledgement to the first frame that includes it")
	set.String(&storm.Command, "kill-cmd", "LOADGEN_KILL_CMD", "",
		"a node's loss: this shell command (sh -c), which should kill a node, runs --kill-after into the first phase's window; "+
			"every viewer whose stream then ends reconnects at once to another node, as a load balancer would send it, and the phase reports the storm")
	set.Duration(&storm.After, "kill-after", "LOADGEN_KILL_AFTER", 5*time.Second, "with --kill-cmd: when, into the first phase's window, it runs")
	set.Bool(&cfg.OneLike, "one-like", "LOADGEN_ONE_LIKE", false,
		"after the last phase, with its viewers still open, like the first post once and report when the last of its viewers had it (from the time Redis stored it): "+
			"the whole audience of one post, not a sample")
	set.Float(&cfg.WriteProbe, "write-probe", "LOADGEN_WRITE_PROBE", 0,
		"likes/s to posts no viewer watches, for a window before any viewer connects and beside every phase's likes: "+
			"the writer's likes per CPU-second, like p99 and Redis per like with the viewers fed, against none (0: no probe)")
	set.Int(&cfg.Writers, "writers", "LOADGEN_WRITERS", 500, "closed-loop writers: each sends its next like when the last is answered")
	set.Float(&cfg.Rate, "rate", "LOADGEN_RATE", 0, "open-loop likes per second (overrides --writers when > 0)")
	set.Duration(&cfg.Warmup, "warmup", "LOADGEN_WARMUP", 5*time.Second, "likes before each measured window")
	set.Duration(&cfg.Window, "window", "LOADGEN_WINDOW", 30*time.Second, "measured window per phase")
	set.List(&sources, "sources", "LOADGEN_SOURCES", "",
		"local source addresses for viewers, e.g. 127.0.0.2-127.0.0.40 (ranges and single addresses, comma-separated); "+
			"each adds a port range, so one machine can hold more than 64K connections")
	set.Float(&maxConnectRate, "max-connect-rate", "LOADGEN_MAX_CONNECT_RATE", 5000, "new viewers per second, all workers together (0 = no limit)")
	set.Int(&cfg.PerWorker, "per-worker", "LOADGEN_PER_WORKER", 15000, "viewers per worker process (a process may hold 20,000 open files here)")
	set.Int(&cfg.ReadBuffer, "read-buffer", "LOADGEN_READ_BUFFER", 64<<10, "bytes one read(2) may take from a viewer's socket (one buffer per reader loop)")
	set.Duration(&cfg.ConnectTimeout, "connect-timeout", "LOADGEN_CONNECT_TIMEOUT", 10*time.Second, "time a viewer may take to connect and get its response head")
	set.Duration(&cfg.LikeTimeout, "like-timeout", "LOADGEN_LIKE_TIMEOUT", 5*time.Second, "timeout of one like request")
	set.Duration(&cfg.ConvergeTimeout, "converge-timeout", "LOADGEN_CONVERGE_TIMEOUT", 2*time.Second, "time viewers have to show the final counts after writes stop")
	set.Int(&cfg.MaxInflight, "max-inflight", "LOADGEN_MAX_INFLIGHT", 4096, "open loop: likes in flight at most (more are skipped and reported)")
	set.String(&postPrefix, "post-prefix", "LOADGEN_POST_PREFIX", "lg"+run, "post id prefix (default unique per run, so runs never share posts)")
	set.Bool(&out.json, "json", "", false, "print the result as JSON instead of the table")
	set.String(&out.csv, "csv", "", "", "also write the result as CSV to this file")
	set.String(&out.html, "html", "", "", "also write a self-contained HTML report with charts to this file")
	if err := set.Parse(args[2:]); err != nil {
		return cfg, out, err
	}
	if redisPasswordFile != "" {
		b, err := os.ReadFile(redisPasswordFile)
		if err != nil {
			return cfg, out, fmt.Errorf("--redis-password-file: %w", err)
		}
		cfg.RedisPassword = strings.TrimRight(string(b), "\r\n")
	}
	for _, c := range conns {
		n, err := strconv.Atoi(c)
		if err != nil {
			return cfg, out, fmt.Errorf("--conns: %q is not a number", c)
		}
		cfg.Conns = append(cfg.Conns, n)
	}
	var err error
	if cfg.Objective, err = slo.Parse(objective); err != nil {
		return cfg, out, err
	}
	if untilBreak {
		if grow != "conns" && grow != "rate" {
			return cfg, out, fmt.Errorf("--grow: %q is neither conns nor rate", grow)
		}
		search.GrowRate = grow == "rate"
		cfg.Search = &search
	}
	if react {
		cfg.React = &reactCfg
	}
	if storm.Command != "" {
		cfg.Storm = &storm
	}
	if cfg.Sources, err = expandSources(sources); err != nil {
		return cfg, out, err
	}
	if cfg.Nodes, err = ramp.ResolveNodes(ctx, fanout); err != nil {
		return cfg, out, err
	}
	if len(writerMetrics) > 0 {
		if cfg.WriterMetrics, err = ramp.ResolveNodes(ctx, writerMetrics); err != nil {
			return cfg, out, err
		}
	}
	if cfg.WorkerExe, err = os.Executable(); err != nil {
		return cfg, out, fmt.Errorf("find own executable for workers: %w", err)
	}
	cfg.Writer = strings.TrimSuffix(cfg.Writer, "/")
	cfg.WorkerArgs = []string{"worker"}
	cfg.MaxConnectRate = maxConnectRate
	cfg.PostPrefix = postPrefix
	cfg.UserPrefix = postPrefix + "-u"
	cfg.Command = "loadgen " + strings.Join(args[1:], " ")
	return cfg, out, cfg.Validate()
}

// expandSources turns "127.0.0.2-127.0.0.40,10.0.0.5" into a list of addresses.
func expandSources(items []string) ([]string, error) {
	var out []string
	for _, item := range items {
		from, to, isRange := strings.Cut(item, "-")
		first, err := netip.ParseAddr(strings.TrimSpace(from))
		if err != nil {
			return nil, fmt.Errorf("--sources: %q is not an address", from)
		}
		last := first
		if isRange {
			if last, err = netip.ParseAddr(strings.TrimSpace(to)); err != nil {
				return nil, fmt.Errorf("--sources: %q is not an address", to)
			}
		}
		if last.Less(first) || first.Is4() != last.Is4() {
			return nil, fmt.Errorf("--sources: bad range %q", item)
		}
		for a := first; ; a = a.Next() {
			if len(out) == maxSources {
				return nil, errors.New("--sources: too many addresses")
			}
			out = append(out, a.String())
			if a == last {
				break
			}
		}
	}
	return out, nil
}

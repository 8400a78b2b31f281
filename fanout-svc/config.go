package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/fanout-svc/internal/stream"
	"github.com/likes/likes/fanout-svc/internal/watching"
	"github.com/likes/likes/fanout-svc/internal/web"
	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/envflag"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/serve"
)

// fdHeadroom is what max-conns leaves of the open-file limit for Redis, listeners and accepts.
const fdHeadroom = 256

// defaultMaxPerSource is MAX_VIEWERS_PER_IP unless set: the deploy files' value, so that a node
// run as built is bounded too. It is far above what one household or office behind one address
// opens, and far below a node's capacity, so that one client cannot fill a node.
const defaultMaxPerSource = 5000

// defaultMaxHTTPConns is MAX_HTTP_CONNS unless set. What net/http serves on a node is a few
// requests at a time (probes, scrapes, the page, the odd stream on its way to the hub), so this
// is far more than they need and bounds what clients holding requests open can take: a
// goroutine and about 10 KB each, and descriptors beside MAX_CONNS's.
const defaultMaxHTTPConns = 4096

// config is fanout-svc's whole configuration, read once from flags and environment.
type config struct {
	Serve       serve.Options
	Redis       redisconn.Config
	Hub         hub.Config
	Posts       posts.Config
	Stream      stream.Config
	Page        web.Config
	Watching    watching.Config
	LogLevel    string
	DrainWindow time.Duration
	RedisGrace  time.Duration
	// MaxHTTPConns bounds the connections net/http holds at once (fastaccept.Config.MaxNetHTTP).
	MaxHTTPConns int
	trusted      []string
}

func loadConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var c config
	s := envflag.New("fanout-svc", getenv, out)
	c.Serve.Register(s, ":8090")
	// A request net/http serves (everything but the fast path's streams) must arrive whole within
	// READ_TIMEOUT, body too: without it a declared body never sent held a connection forever, a
	// descriptor outside MAX_CONNS. Streams are unaffected: Hijack clears the deadline.
	s.Duration(&c.Serve.ReadTimeout, "read-timeout", "READ_TIMEOUT", 10*time.Second, "time allowed to read a whole request, body included (not a stream's life: a stream's connection leaves net/http once its request is read)")
	c.Redis.Register(s)
	s.String(&c.LogLevel, "log-level", "LOG_LEVEL", "info", "log level: debug, info, warn, error")
	s.Int(&c.MaxHTTPConns, "max-http-conns", "MAX_HTTP_CONNS", defaultMaxHTTPConns, "connections net/http serves at once: every request but the streams the event loops serve (the page, probes, /metrics, a stream until it reaches the hub, idle keep-alives); more are answered 503 and closed")
	s.Int(&c.Stream.MaxConns, "max-conns", "MAX_CONNS", defaultMaxConns(), "viewers this node admits; more get 503 + Retry-After (default: open-file limit minus headroom)")
	s.Int(&c.Stream.MaxPosts, "max-posts", "MAX_POSTS_PER_STREAM", hub.MaxPosts, "posts one stream may follow (at most "+strconv.Itoa(hub.MaxPosts)+")")
	s.Duration(&c.Stream.Retry, "retry", "SSE_RETRY", 2*time.Second, "reconnect delay sent to viewers as retry:, jittered up to +50%")
	s.Int(&c.Stream.MaxPerSource, "max-viewers-per-ip", "MAX_VIEWERS_PER_IP", defaultMaxPerSource, "viewers per client (an IPv4 address, an IPv6 /64); 0 = no limit")
	s.List(&c.trusted, "trusted-proxies", "TRUSTED_PROXIES", "", "proxies whose X-Forwarded-For is believed for MAX_VIEWERS_PER_IP: addresses, CIDRs, or host names (the balancer's service name: every address it resolves to is trusted; names are resolved at start and again every "+clientip.DefaultRefresh.String()+", and one that does not resolve yet trusts nothing)")
	s.Int(&c.Hub.Loops, "shards", "SHARDS", 0, "event loops; 0 = GOMAXPROCS")
	s.Duration(&c.Hub.FlushWindow, "flush-window", "FLUSH_WINDOW", 0, "batch each viewer's frames over this window into one write; 0 = write at once")
	s.Float(&c.Hub.PostRate, "post-rate", "POST_RATE_LIMIT", 0, "max updates per second per post sent to viewers (newest wins); 0 = the display budget decides")
	s.Float(&c.Hub.DisplayBudget, "display-budget", "DISPLAY_BUDGET", hub.DefaultDisplayBudget,
		"frames per second one post may cost this node, all its viewers together: a post with v viewers here is shown at most budget/v times a second (newest wins; the first update after a quiet spell at once); 0 = every update")
	s.Float(&c.Hub.DisplayMinRate, "display-min-rate", "DISPLAY_MIN_RATE", hub.DefaultDisplayMinRate, "the display budget never shows a post less often than this many times a second")
	s.Duration(&c.Hub.Heartbeat, "heartbeat", "HEARTBEAT_INTERVAL", 15*time.Second, "idle viewers get a ': ping' comment (or their owed watching numbers) this often")
	s.Duration(&c.Hub.StallTimeout, "stall-timeout", "STALL_TIMEOUT", 60*time.Second, "drop a viewer whose socket has not drained for this long; 0 = never")
	s.Int(&c.Hub.SendBuffer, "send-buffer", "SEND_BUFFER", 64<<10, "kernel send buffer per viewer socket in bytes (bounds what a never-reading client can pin); 0 = kernel autotuning")
	s.Duration(&c.Posts.UnsubscribeGrace, "unsubscribe-grace", "UNSUBSCRIBE_GRACE", 5*time.Second, "keep a post's subscription this long after its last viewer left")
	s.Duration(&c.Watching.Interval, "watching-interval", "WATCHING_INTERVAL", 2*time.Second, "how often the nodes count a post's \"watching now\" number (a change reaches viewers with their next count or heartbeat); 0 = off")
	s.Duration(&c.DrainWindow, "drain-window", "DRAIN_WINDOW", 5*time.Second, "on SIGTERM, close viewers spread over this window")
	s.Duration(&c.RedisGrace, "redis-grace", "REDIS_GRACE", 20*time.Second, "after Redis has been unreachable this long, move viewers to other nodes (closed over the drain window); 0 = never")
	s.String(&c.Page.WriterURL, "writer-public-url", "WRITER_PUBLIC_URL", "http://localhost:8080", "writer URL the web page sends likes to (as a browser reaches it)")
	var pagePosts []string
	s.List(&pagePosts, "page-posts", "PAGE_POSTS", "1,2,3,4", "posts shown on the web page")
	s.String(&c.Page.Token, "page-token", "PAGE_TOKEN", "", "development bearer token the page sends instead of X-User-ID")
	var reactionKinds string
	s.String(&reactionKinds, "reaction-kinds", "REACTION_KINDS", ids.DefaultReactionKinds, "reaction kinds the web page offers, in order (the writers' REACTION_KINDS)")
	if err := s.Parse(args[1:]); err != nil {
		return c, err
	}
	c.Page.Posts = pagePosts
	var err error
	if c.Page.Reactions, err = ids.ParseReactionKinds(reactionKinds); err != nil {
		return c, err
	}
	c.Page.HeartbeatMS = c.Hub.Heartbeat.Milliseconds()
	return c, c.validate()
}

func (c *config) validate() error {
	if err := c.Redis.Validate(); err != nil {
		return err
	}
	var err error
	if c.Stream.Clients, err = clientip.ParseTrusted(c.trusted, nil); err != nil {
		return fmt.Errorf("trusted proxies: %w", err)
	}
	if c.Stream.MaxPosts < 1 || c.Stream.MaxPosts > hub.MaxPosts {
		return fmt.Errorf("max-posts must be 1-%d", hub.MaxPosts)
	}
	if c.Stream.MaxConns < 1 {
		return errors.New("max-conns must be positive")
	}
	if c.MaxHTTPConns < 1 {
		return errors.New("max-http-conns must be positive")
	}
	if c.Serve.ReadTimeout <= 0 {
		return errors.New("read-timeout must be positive") // 0 would let a request's body hold its connection forever
	}
	if c.Watching.Interval < 0 || (c.Watching.Interval > 0 && c.Watching.Interval < 10*time.Millisecond) {
		return errors.New("watching-interval must be 0 (off) or at least 10ms")
	}
	if c.Stream.Retry < 0 || c.Hub.FlushWindow < 0 || c.Hub.PostRate < 0 || c.RedisGrace < 0 ||
		c.Hub.DisplayBudget < 0 || c.Hub.DisplayMinRate < 0 {
		return errors.New("retry, flush-window, post-rate, display-budget, display-min-rate and redis-grace must not be negative")
	}
	if err := c.Page.Validate(); err != nil {
		return fmt.Errorf("page: %w", err)
	}
	if len(c.Page.Posts) > c.Stream.MaxPosts {
		// The page follows all its posts on one stream; the node would refuse it every time.
		return fmt.Errorf("page shows %d posts but a stream may follow at most %d", len(c.Page.Posts), c.Stream.MaxPosts)
	}
	return nil
}

// defaultMaxConns is the open-file limit minus headroom: past it accept() would fail with EMFILE,
// which a client sees as a hang; a 503 sends it elsewhere at once.
func defaultMaxConns() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Max == unix.RLIM_INFINITY {
		return 100_000
	}
	return max(int(lim.Max)-fdHeadroom, 1)
}

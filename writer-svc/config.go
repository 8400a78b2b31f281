package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/envflag"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/writer-svc/internal/auth"
	"github.com/likes/likes/writer-svc/internal/ratelimit"
	"github.com/likes/likes/writer-svc/internal/redisclock"
	"github.com/likes/likes/writer-svc/internal/session"
	"github.com/likes/likes/writer-svc/internal/store"
)

// Config is writer-svc's whole configuration, read once from flags and environment.
type Config struct {
	Serve          serve.Options
	Redis          redisconn.Config
	LogLevel       string
	RequestTimeout time.Duration
	MaxReadPosts   int
	BatchWindow    time.Duration
	BatchSize      int
	AckReplicas    int
	// AckAll (REDIS_ACK_REPLICAS=all, Sentinel only) waits for every replica that a majority of
	// the Sentinels does not call down (package ackquorum), in place of a fixed AckReplicas.
	AckAll bool
	// ReactionKinds are the reactions POST /react/{postID}/{kind} takes; a user may react to a
	// post once per ReactionInterval.
	ReactionKinds    []string
	ReactionInterval time.Duration
	// TimelineRetention is how long each minute of a post's timeline of likes and reactions is kept
	// (GET /posts/{postID}/timeline); 0 keeps none.
	TimelineRetention time.Duration
	EmptyPostTTL      time.Duration // keys of a post left with no likes and no reactions (store.Options.EmptyPostTTL)
	ReadBarrierGap    time.Duration // least time between two read barriers on a primary (store.Options.ReadBarrierGap)
	CORSOrigins       []string
	AllowedOrigins    []string // origins whose pages may change likes and sessions; the own site always may
	LikeRate          ratelimit.Rate
	LikeRatePerPost   bool           // LikeRate counts per user and post, not per user across posts
	LikeAddrRate      ratelimit.Rate // likes per client address, all its users together
	NewPostRate       ratelimit.Rate // new posts per user (likes and reactions of unknown posts)
	NewPostAddrRate   ratelimit.Rate // new posts per client address
	UserDataAddrRate  ratelimit.Rate // reads and erasures of user data per client address
	ReadAddrRate      ratelimit.Rate // reads of counts (GET /count, /counts, /likes) per client address
	Auth              AuthConfig
	Session           SessionConfig
	// ClockUncertaintyMax is how uncertain the measured offset of Redis' clock may be before writes
	// get 503 (redisclock.Options.MaxUncertainty).
	ClockUncertaintyMax time.Duration
	// Clients tells a request's client from its peer, or from X-Forwarded-For when the peer is
	// a trusted proxy (TRUSTED_PROXIES), for per-address limits.
	Clients clientip.Resolver
}

// SessionConfig configures the writer's anonymous sessions (POST /session). On by default: with
// neither the site's JWTs nor TRUST_USER_HEADER, session tokens are the only way a like names its
// user, so turning them off there leaves the writer unable to identify anyone and it refuses to
// start.
type SessionConfig struct {
	Enabled bool
	session.Options
	Rate        ratelimit.Rate // sessions issued per client address
	RefreshRate ratelimit.Rate // session refreshes per client address
}

// AuthConfig selects how users are identified besides session tokens: the site's JWTs (a secret
// or a JWKS), or the X-User-ID header a gateway sets (TrustUserHeader). At most one of the two;
// with neither, only session tokens identify a user. Trusting the header is opt-in because a
// writer reachable by clients would otherwise let anyone like in any user's name.
type AuthConfig struct {
	JWTSecret       string
	JWKSURL         string
	JWKSRefresh     time.Duration
	Audience        string
	Issuer          string
	TrustUserHeader bool
	// AdminToken (a secret of at least auth.MinAdminTokenLen characters) and AdminRole (a role
	// claim of the site's JWTs) grant the admin API: another user's likes, listed or erased.
	AdminToken string
	AdminRole  string
}

// Enabled reports whether the site's JWTs are configured (a bearer token is then required).
func (a AuthConfig) Enabled() bool { return a.JWTSecret != "" || a.JWKSURL != "" }

// Mode names the identity mode for the start log: "site-jwt", "trusted-header" or "sessions".
func (a AuthConfig) Mode() string {
	switch {
	case a.Enabled():
		return "site-jwt"
	case a.TrustUserHeader:
		return "trusted-header"
	default:
		return "sessions"
	}
}

// The per-address defaults are sized for a real site, where an office or a mobile carrier puts
// many people behind one address: 30 new sessions a minute with a burst of 60 (a crowd arriving
// at once), and 100 likes a second with a burst of 2,000 for all the users behind one address.
// A farm of fresh sessions from one address is held to the first; the second bounds its writes.
const (
	defaultSessionRate = "30/1m burst 60"
	// defaultTimelineRetention keeps a talk's timeline a month after it: "analytics afterward".
	defaultTimelineRetention = 30 * 24 * time.Hour
	defaultLikeAddrRate      = "6000/1m burst 2000"
	// A user brings new posts into existence (likes or reactions of post ids no like or reaction
	// has named yet) at most this fast: far above a reader's pace through a feed, far below a
	// script's through post 1, 2, 3... An address, all its users together, ten times as much.
	defaultNewPostRate     = "60/1m burst 120"
	defaultNewPostAddrRate = "600/1m burst 1200"
	// Reads and erasures of user data (a post's likers, a user's likes, their erasure) per address:
	// a page of likers per post view for a busy office, far below a scraper's pace.
	defaultUserDataAddrRate = "1200/1m burst 600"
	// Reads of counts (GET /count/{postID}, /counts, /likes) per address: likes.js reads a page's
	// posts 100 to a request, on load and after each stream reconnect, so 600 is that many
	// viewers behind one address loading at once (a fanout node's crash reconnects all its
	// viewers within seconds), and 20 a second is 1,200 page loads a minute, while a flood from
	// one address costs Redis at most 20 reads a second per writer past its burst (each writer
	// counts in its own memory: ratelimit.Local).
	defaultReadAddrRate = "1200/1m burst 600"
	// Session refreshes per address: one per user per SESSION_TTL, for thousands of users behind
	// one address.
	defaultSessionRefreshRate = "600/1m burst 600"
)

// minSecretLen is the HS256 key size RFC 7518 §3.2 requires (the hash output, 256 bits).
const minSecretLen = 32

// maxReadPostsLimit bounds MAX_POSTS_PER_READ: 1,000 ids of up to 64 characters fill a 64 KiB
// query, far beyond the default header limit, so a larger cap could never be used.
const maxReadPostsLimit = 1000

const usageHeader = `Usage: writer-svc [flags]

writer-svc records likes in Redis and publishes the post's new count to its channel.
Every flag can also be set by the environment variable named after it; a flag wins.

API: POST and DELETE /like/{postID} (the user named by a bearer token, or by X-User-ID when
trusted), POST /react/{postID}/{kind} (one of REACTION_KINDS), GET /count/{postID}, GET /likes?posts=a,b,c (the user's likes and counts),
GET /counts?posts=a,b,c, GET /likes/{postID}/users (who liked it, newest first), GET and DELETE
/me/likes (the user's likes: export, erase), GET and DELETE /admin/users/{userID}/likes (the same
for an admin: ADMIN_TOKEN or a site JWT with AUTH_ADMIN_ROLE), /healthz, /readyz, /metrics;
with sessions on (the default),
POST /session (a token for a new anonymous user) and POST /session/refresh (a new token for the
bearer's user).

Identity modes, chosen at start (a request without an accepted identity gets 401):
  sessions (default)  only session tokens from POST /session; X-User-ID is ignored.
  site JWTs           AUTH_JWT_SECRET or AUTH_JWKS_URL: a bearer JWT is required and the user is
                      its sub claim; session tokens too while sessions are on. With a JWKS,
                      AUTH_JWT_AUDIENCE is required and AUTH_JWT_ISSUER is recommended.
  trusted header      TRUST_USER_HEADER=true: X-User-ID names the user (session tokens too while
                      sessions are on). Only behind a gateway that authenticates users, sets that
                      header and strips the client's copy; never exposed directly.
TRUST_USER_HEADER with site JWTs, or SESSIONS=false with neither, refuses to start.
User ids beginning with "bench-" are load-test users: only benchmark tokens (BENCH_SESSION_KEY_FILE)
name them, and a site JWT or X-User-ID naming one is refused.

Session signing keys, chosen at start: SESSION_KEY_FILE if set, else AUTH_SESSION_SECRET (one key,
no rotation), else keys the writers create and rotate in Redis (SESSION_KEY_ROTATE), which anyone
with the writers' Redis rights can read and sign any user's session with: use a file.
SESSION_KEY_FILE holds lines of "kid base64url-key" (kid: letters, digits, - _ .; a key of at
least 32 random bytes; # comments). Every key verifies; the last one signs. The file is read again
every 5s (a Kubernetes Secret is updated in place, with no signal), and a file that became
unreadable or malformed keeps the keys in memory and is logged. To rotate:
  1. append a new key (credentials session-key prints one): it verifies at once; a writer signs
     with it 2m after it reads it, once every replica has it (a Secret may take a minute or two
     to reach every pod);
  2. wait SESSION_TTL + SESSION_REFRESH_GRACE (25h by default) after that: no token of the old
     key can be used or refreshed any more;
  3. remove the old key. Removing a key at once ends every session it signed.

Flags:
`

// loadConfig parses args (args[0] is the program name) with getenv for defaults. It returns
// flag.ErrHelp after printing usage for -h/--help.
func loadConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	var c Config
	var ackReplicas, likeRate, likeAddrRate, newPostRate, newPostAddrRate, dataAddrRate, readAddrRate, refreshRate, sessionRate, sessionSecret, benchKeyFile, kinds string
	var trusted []string
	set := envflag.New("writer-svc", getenv, out)
	set.FS.Usage = func() {
		fmt.Fprint(out, usageHeader)
		set.FS.PrintDefaults()
	}
	c.Serve.Register(set, ":8080")
	set.Duration(&c.Serve.ReadTimeout, "read-timeout", "READ_TIMEOUT", 10*time.Second, "time allowed to read a whole request")
	set.Duration(&c.Serve.WriteTimeout, "write-timeout", "WRITE_TIMEOUT", 10*time.Second, "time allowed to write a response (must exceed the request timeout; on a Cluster, by 3s or more)")
	c.Redis.Register(set)
	set.String(&c.LogLevel, "log-level", "LOG_LEVEL", "info", "log level: debug, info, warn, error")
	set.Duration(&c.RequestTimeout, "request-timeout", "REQUEST_TIMEOUT", 2*time.Second, "time allowed for one request's Redis work; past it the client gets 503 with Retry-After")
	set.Int(&c.MaxReadPosts, "max-read-posts", "MAX_POSTS_PER_READ", 100, "posts one GET /likes or /counts may name")
	set.Duration(&c.BatchWindow, "batch-window", "BATCH_WINDOW", 0, "how long a post's next batch of likes may wait to fill after the call for that post returns (0: it leaves at once); a like of a quiet post (no call in flight or within this window) never waits; 10ms makes clients that like in step go in full batches")
	set.Int(&c.BatchSize, "batch-size", "BATCH_SIZE", 256, fmt.Sprintf("most likes and unlikes of one post in one Redis script call, 1 to %d; a post's queue holds 4 batches, beyond which likes get 503", store.MaxBatch))
	set.Duration(&c.ClockUncertaintyMax, "clock-uncertainty-max", "CLOCK_UNCERTAINTY_MAX", redisclock.DefaultMaxUncertainty, "how far off the measured offset of Redis' clock from this writer's may be (half the shortest TIME round trip) before likes, unlikes, reactions and erasures get 503 with Retry-After; so do they while the offset is unmeasured for 15s (Redis unreachable). The default is the like script's 25ms margin, within which a like answered 503 can never be stored later")
	set.String(&ackReplicas, "redis-ack-replicas", "REDIS_ACK_REPLICAS", "0", `replicas that must confirm a batch of likes (WAIT, bounded by the request timeout) before they are answered; fewer: 503 with Retry-After and "unconfirmed": true, the like stays on the primary and a retry counts once. "all" (with Sentinel): every replica that a majority of the Sentinels does not call down, the setting that loses no acknowledged like in a partition; a number N: N replicas; 0 answers once the primary has it`)
	set.String(&kinds, "reaction-kinds", "REACTION_KINDS", ids.DefaultReactionKinds, fmt.Sprintf("comma-separated reaction kinds POST /react/{postID}/{kind} counts, at most %d, named like post ids", ids.MaxReactionKinds))
	set.Duration(&c.ReactionInterval, "reaction-interval", "REACTION_INTERVAL", store.DefaultReactionInterval, "a user may react to a post (any kind) once per interval; sooner gets 429 with Retry-After")
	set.Duration(&c.TimelineRetention, "timeline-retention", "TIMELINE_RETENTION", defaultTimelineRetention, "how long each minute of a post's likes and reactions per second is kept for GET /posts/{postID}/timeline (0: no timeline)")
	set.Duration(&c.ReadBarrierGap, "read-barrier-gap", "READ_BARRIER_GAP", 0, "with REDIS_ACK_REPLICAS, the least time between two read barriers (a SET and a WAIT that confirm the reads of counts) on one primary; the reads that come meanwhile share the next one. 0: the next starts when the one in flight ends (one in flight per primary per writer, however many reads)")
	set.Duration(&c.EmptyPostTTL, "empty-post-ttl", "EMPTY_POST_TTL", defaultEmptyPostTTL, "how long the keys of a post left with no likes and no reactions (liked, then unliked) are kept before they expire; a like or a reaction meanwhile keeps them (0: for ever)")
	set.List(&c.CORSOrigins, "cors-origins", "CORS_ORIGINS", "", `comma-separated origins allowed to call the API from a browser ("*" for any; empty: no CORS headers)`)
	set.List(&c.AllowedOrigins, "allowed-origins", "ALLOWED_ORIGINS", "", `comma-separated origins whose pages may like, unlike, react, start sessions and erase likes through a browser, besides the API's own site ("*" for any; empty: CORS_ORIGINS)`)
	set.String(&likeRate, "like-rate", "LIKE_RATE", "", `per-user like rate limit shared by all replicas, N/duration with an optional burst such as "30/1m burst 10" (empty: off)`)
	set.Bool(&c.LikeRatePerPost, "like-rate-per-post", "LIKE_RATE_PER_POST", false, "count LIKE_RATE per user and post (bounds like/unlike toggling of one post) instead of per user across all posts (bounds a user's likes in a feed)")
	set.String(&likeAddrRate, "like-addr-rate", "LIKE_ADDR_RATE", defaultLikeAddrRate, `likes per client address (an IPv6 /64 counts as one), all its users together, shared by all replicas; sized for a carrier or office NAT; a load test from one address turns it off ("off")`)
	set.String(&newPostRate, "new-post-rate", "NEW_POST_RATE", defaultNewPostRate, `new posts one user may bring into existence with likes and reactions, shared by all replicas ("off": unlimited); bounds how far one session can grow Redis`)
	set.String(&newPostAddrRate, "new-post-addr-rate", "NEW_POST_ADDR_RATE", defaultNewPostAddrRate, `new posts per client address, all its users together ("off": unlimited)`)
	set.String(&dataAddrRate, "user-data-addr-rate", "USER_DATA_ADDR_RATE", defaultUserDataAddrRate, `reads and erasures of user data (GET /likes/{postID}/users, GET and DELETE /me/likes) per client address, shared by all replicas ("off": unlimited)`)
	set.String(&readAddrRate, "read-addr-rate", "READ_ADDR_RATE", defaultReadAddrRate, `reads of counts (GET /count/{postID}, /counts, /likes) per client address (an IPv6 /64 counts as one), counted in each replica's memory (no Redis call: a read writes nothing), so an address's bound is this times the writer replicas; past it 429 with Retry-After before any Redis work ("off": unlimited; a load test from one address turns it off)`)
	set.String(&refreshRate, "session-refresh-rate", "SESSION_REFRESH_RATE", defaultSessionRefreshRate, `session refreshes per client address, shared by all replicas ("off": unlimited)`)
	set.String(&c.Auth.JWTSecret, "auth-jwt-secret", "AUTH_JWT_SECRET", "", "HS256 secret (at least 32 bytes); when set, a bearer JWT is required and the user is its sub claim")
	set.String(&c.Auth.JWKSURL, "auth-jwks-url", "AUTH_JWKS_URL", "", "JWKS URL of the identity provider; when set, a bearer JWT (RS/PS/ES/EdDSA) is required and the user is its sub claim")
	set.Duration(&c.Auth.JWKSRefresh, "auth-jwks-refresh", "AUTH_JWKS_REFRESH", 15*time.Minute, "how often the JWKS is refetched (an unknown key id also refetches, at most every 10s)")
	set.String(&c.Auth.Audience, "auth-jwt-audience", "AUTH_JWT_AUDIENCE", "", "required aud claim of the site's tokens; required with AUTH_JWKS_URL (empty: not checked, allowed only with AUTH_JWT_SECRET)")
	set.String(&c.Auth.Issuer, "auth-jwt-issuer", "AUTH_JWT_ISSUER", "", "required iss claim of the site's tokens, recommended with AUTH_JWKS_URL (empty: not checked)")
	set.Bool(&c.Auth.TrustUserHeader, "trust-user-header", "TRUST_USER_HEADER", false, "believe the X-User-ID header as the user; only behind a gateway that authenticates users, sets it and strips the client's copy (not with AUTH_JWT_SECRET/AUTH_JWKS_URL)")
	set.String(&c.Auth.AdminToken, "admin-token", "ADMIN_TOKEN", "", fmt.Sprintf("bearer token of the admin API, /admin/users/{id}/likes (at least %d characters; empty: only admin-role site JWTs)", auth.MinAdminTokenLen))
	set.String(&c.Auth.AdminRole, "auth-admin-role", "AUTH_ADMIN_ROLE", "admin", `role that grants the admin API to a site JWT, in its "role" claim or its "roles" list (empty: no JWT is an admin's)`)
	d := session.DefaultOptions()
	set.Bool(&c.Session.Enabled, "sessions", "SESSIONS", true, "serve POST /session and /session/refresh and accept their tokens (Authorization: Bearer) for likes, besides the site's JWTs or a trusted X-User-ID; false needs one of those")
	set.Duration(&c.Session.TTL, "session-ttl", "SESSION_TTL", d.TTL, "lifetime of a session token")
	set.Duration(&c.Session.RefreshGrace, "session-refresh-grace", "SESSION_REFRESH_GRACE", d.RefreshGrace, "how long after it expires a session token may still be refreshed")
	set.Duration(&c.Session.MaxAge, "session-max-age", "SESSION_MAX_AGE", d.MaxAge, "refreshes stop this long after the session began; the client then starts a new one")
	set.String(&c.Session.KeyFile, "session-key-file", "SESSION_KEY_FILE", "", "file of the session signing keys, one \"kid base64url-key\" a line (at least 32 bytes each; the last signs, all verify), read again every 5s; see \"Session signing keys\" above. Wins over AUTH_SESSION_SECRET and the keys in Redis")
	set.Duration(&c.Session.KeyRotate, "session-key-rotate", "SESSION_KEY_ROTATE", d.KeyRotate, "without SESSION_KEY_FILE or AUTH_SESSION_SECRET: a new signing key (kept in Redis, shared by all replicas) takes over this often; old ones verify until their tokens can no longer be refreshed")
	set.String(&sessionSecret, "auth-session-secret", "AUTH_SESSION_SECRET", "", "static HS256 key (at least 32 bytes, kid \"static\") for session tokens instead of the rotating keys in Redis; not used with SESSION_KEY_FILE")
	set.String(&benchKeyFile, "bench-session-key-file", "BENCH_SESSION_KEY_FILE", "", `benchmark mode: a file holding a key (at least 32 bytes) with which a load generator signs session tokens (kid "bench") for users whose ids begin with "bench-", and only for them; empty: off`)
	set.String(&sessionRate, "session-rate", "SESSION_RATE", defaultSessionRate, `new sessions per client address (an IPv6 /64 counts as one), shared by all replicas, N/duration with an optional burst; "off": none`)
	set.List(&trusted, "trusted-proxies", "TRUSTED_PROXIES", "", "proxies whose X-Forwarded-For is believed for per-address limits: addresses, CIDRs, or host names (the balancer's service name: every address it resolves to is trusted; names are resolved at start and again every "+clientip.DefaultRefresh.String()+", and one that does not resolve yet trusts nothing)")
	if len(args) > 0 {
		args = args[1:]
	}
	if err := set.Parse(args); err != nil {
		return Config{}, err
	}
	var err error
	if ackReplicas == "all" {
		c.AckAll = true
	} else if c.AckReplicas, err = strconv.Atoi(ackReplicas); err != nil {
		return Config{}, fmt.Errorf("redis ack replicas %q: want a number or \"all\"", ackReplicas)
	}
	rate, err := ratelimit.ParseRate(likeRate)
	if err != nil {
		return Config{}, fmt.Errorf("like rate: %w", err)
	}
	c.LikeRate = rate
	if c.LikeAddrRate, err = ratelimit.ParseRate(likeAddrRate); err != nil {
		return Config{}, fmt.Errorf("like addr rate: %w", err)
	}
	if c.NewPostRate, err = ratelimit.ParseRate(newPostRate); err != nil {
		return Config{}, fmt.Errorf("new post rate: %w", err)
	}
	if c.NewPostAddrRate, err = ratelimit.ParseRate(newPostAddrRate); err != nil {
		return Config{}, fmt.Errorf("new post addr rate: %w", err)
	}
	if c.UserDataAddrRate, err = ratelimit.ParseRate(dataAddrRate); err != nil {
		return Config{}, fmt.Errorf("user data addr rate: %w", err)
	}
	if c.ReadAddrRate, err = ratelimit.ParseRate(readAddrRate); err != nil {
		return Config{}, fmt.Errorf("read addr rate: %w", err)
	}
	if c.Session.RefreshRate, err = ratelimit.ParseRate(refreshRate); err != nil {
		return Config{}, fmt.Errorf("session refresh rate: %w", err)
	}
	if c.Session.Rate, err = ratelimit.ParseRate(sessionRate); err != nil {
		return Config{}, fmt.Errorf("session rate: %w", err)
	}
	if sessionSecret != "" {
		c.Session.Secret = []byte(sessionSecret)
	}
	if c.Session.KeyFile != "" {
		if _, err := sessiontoken.ReadKeyFile(c.Session.KeyFile); err != nil {
			return Config{}, fmt.Errorf("SESSION_KEY_FILE: %w", err)
		}
	}
	if benchKeyFile != "" {
		key, err := sessiontoken.ReadBenchKey(benchKeyFile)
		if err != nil {
			return Config{}, fmt.Errorf("BENCH_SESSION_KEY_FILE: %w", err)
		}
		c.Session.BenchSecret = key.Secret
	}
	if c.Clients, err = clientip.ParseTrusted(trusted, nil); err != nil {
		return Config{}, fmt.Errorf("trusted proxies: %w", err)
	}
	if c.ReactionKinds, err = ids.ParseReactionKinds(kinds); err != nil {
		return Config{}, err
	}
	if len(c.AllowedOrigins) == 0 {
		c.AllowedOrigins = c.CORSOrigins // the sites whose pages may call the API at all
	}
	return c, c.validate()
}

// defaultEmptyPostTTL bounds what the posts an address likes and then unlikes hold to a day of
// NEW_POST_ADDR_RATE (864,000 posts, about 300 bytes each: 260 MB at its full rate, where they
// grew without end). A day, not minutes: a post's version stays above every earlier one unless
// Redis' clock steps back by more than this, and a writer's known posts (up to 131,072) come back
// free of NEW_POST_RATE, each announcing its creation to every fanout node again, once per expiry.
const defaultEmptyPostTTL = 24 * time.Hour

func (c Config) validate() error {
	if err := c.Redis.Validate(); err != nil {
		return err
	}
	switch {
	case c.RequestTimeout <= 0:
		return errors.New("request timeout must be positive")
	case c.TimelineRetention < 0:
		return fmt.Errorf("timeline retention %s must be 0 (none) or more", c.TimelineRetention)
	case c.ReadBarrierGap < 0:
		return fmt.Errorf("read barrier gap %s must not be negative", c.ReadBarrierGap)
	case c.EmptyPostTTL < 0 || (c.EmptyPostTTL > 0 && c.EmptyPostTTL < time.Millisecond):
		return fmt.Errorf("empty post ttl %s must be 0 (never) or at least 1ms", c.EmptyPostTTL)
	case c.ReactionInterval < time.Millisecond:
		return fmt.Errorf("reaction interval %s must be at least 1ms", c.ReactionInterval)
	case c.MaxReadPosts < 1 || c.MaxReadPosts > maxReadPostsLimit:
		return fmt.Errorf("max read posts %d must be 1-%d", c.MaxReadPosts, maxReadPostsLimit)
	case c.BatchWindow < 0:
		return errors.New("batch window must not be negative")
	case c.BatchSize < 1 || c.BatchSize > store.MaxBatch:
		return fmt.Errorf("batch size %d must be 1 to %d", c.BatchSize, store.MaxBatch)
	case c.ClockUncertaintyMax <= 0:
		return fmt.Errorf("clock uncertainty max %s must be positive", c.ClockUncertaintyMax)
	case c.AckReplicas < 0:
		return fmt.Errorf("ack replicas %d must not be negative", c.AckReplicas)
	case c.AckAll && !c.Redis.Sentinel():
		return errors.New(`REDIS_ACK_REPLICAS "all" needs Sentinel (REDIS_SENTINEL_ADDRS): it asks the Sentinels which replicas are down`)
	case c.Serve.WriteTimeout > 0 && c.Serve.WriteTimeout <= c.RequestTimeout:
		return fmt.Errorf("write timeout %s must exceed the request timeout %s", c.Serve.WriteTimeout, c.RequestTimeout)
	case c.Redis.Cluster() && c.Serve.WriteTimeout > 0 && c.Serve.WriteTimeout < minClusterWriteTimeout(c):
		return fmt.Errorf("write timeout %s must be at least %s on a Cluster (the request timeout + 3s): an erasure of a user's likes (DELETE /me/likes) waits out the request timeout + 1s before it answers",
			c.Serve.WriteTimeout, minClusterWriteTimeout(c))
	case c.Auth.JWTSecret != "" && len(c.Auth.JWTSecret) < minSecretLen:
		return fmt.Errorf("auth jwt secret must be at least %d bytes", minSecretLen)
	case c.Auth.JWKSURL != "" && c.Auth.JWKSRefresh <= 0:
		return errors.New("jwks refresh interval must be positive")
	case c.Auth.AdminToken != "" && len(c.Auth.AdminToken) < auth.MinAdminTokenLen:
		return fmt.Errorf("admin token must be at least %d characters", auth.MinAdminTokenLen)
	case c.Auth.AdminToken != "" && !sendableBearer(c.Auth.AdminToken):
		// Checked here because the writer parses every bearer as RFC 6750 token68: a token with
		// other characters would start and then answer every admin request 401.
		return errors.New("admin token must be made of A-Z a-z 0-9 - . _ ~ + / = (a bearer token's characters)")
	}
	if err := c.validateIdentity(); err != nil {
		return err
	}
	if c.Session.Enabled {
		if err := c.Session.Validate(); err != nil {
			return err
		}
	}
	if c.Auth.JWKSURL != "" {
		u, err := url.Parse(c.Auth.JWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("auth jwks url %q must be an absolute http(s) URL", c.Auth.JWKSURL)
		}
	}
	return nil
}

// validateIdentity refuses the identity settings that leave who is liking ambiguous or open.
func (c Config) validateIdentity() error {
	switch {
	case c.Auth.TrustUserHeader && c.Auth.Enabled():
		// A gateway mode and a token mode at once: which one names the user would be a guess.
		return errors.New("TRUST_USER_HEADER and AUTH_JWT_SECRET/AUTH_JWKS_URL are both set: choose one " +
			"(trust the gateway's X-User-ID, or require the site's JWTs)")
	case !c.Auth.TrustUserHeader && !c.Auth.Enabled() && !c.Session.Enabled:
		return errors.New("SESSIONS=false with neither AUTH_JWT_SECRET/AUTH_JWKS_URL nor TRUST_USER_HEADER: " +
			"no way to identify anyone; keep sessions on, configure the site's JWTs, or trust a gateway's X-User-ID")
	case c.Session.BenchSecret != nil && !c.Session.Enabled:
		return errors.New("BENCH_SESSION_KEY_FILE with SESSIONS=false: benchmark tokens are session tokens; turn sessions on, or unset the key")
	case c.Auth.JWKSURL != "" && c.Auth.Audience == "":
		// A shared identity provider signs tokens for many APIs with the same keys; without an
		// audience check one issued for another API would like here.
		return errors.New("AUTH_JWKS_URL needs AUTH_JWT_AUDIENCE: a token the identity provider issued for another API " +
			"must not be accepted (set AUTH_JWT_ISSUER too)")
	}
	return nil
}

// sendableBearer reports whether token can arrive as a bearer token (Authorization: Bearer token)
// that the writer's parser accepts.
func sendableBearer(token string) bool {
	got, err := auth.ParseBearer("Bearer " + token)
	return err == nil && got == token
}

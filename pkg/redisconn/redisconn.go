// Package redisconn turns configuration into a go-redis client, so that both services read the
// same settings the same way: REDIS_URL for one server, REDIS_CLUSTER_ADDRS for a cluster, or
// REDIS_SENTINEL_ADDRS (with REDIS_SENTINEL_MASTER) for a primary with replicas that Sentinel
// fails over.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/envflag"
)

// DefaultSentinelMaster is the master name used when sentinel addresses are set and
// REDIS_SENTINEL_MASTER is not: the name of Redis's example sentinel.conf and of most charts.
const DefaultSentinelMaster = "mymaster"

// Config selects and tunes the Redis client. At most one of ClusterAddrs and SentinelAddrs may
// be set; either one makes URL ignored.
type Config struct {
	URL            string
	ClusterAddrs   []string
	SentinelAddrs  []string // Sentinels to ask for the primary (host:port)
	SentinelMaster string   // the name the Sentinels monitor the primary under; "" is DefaultSentinelMaster
	KeyPrefix      string
	Timeout        time.Duration // dial, read and write timeout of one command
	PoolSize       int
	// Username and PasswordFile are the ACL user to connect as, to the data nodes and to the
	// Sentinels alike (a deployment's Sentinels know each program's user under the same name and
	// password: see pkg/redisacl). The password is read from a file, never from the environment,
	// where `docker inspect` and /proc/<pid>/environ would show it.
	Username     string
	PasswordFile string
}

// Register defines the Redis flags on s.
func (c *Config) Register(s *envflag.Set) {
	s.String(&c.URL, "redis-url", "REDIS_URL", "redis://127.0.0.1:6379/0", "Redis server URL (ignored when cluster or sentinel addresses are set)")
	s.List(&c.ClusterAddrs, "redis-cluster-addrs", "REDIS_CLUSTER_ADDRS", "", "comma-separated Redis Cluster seed addresses; enables cluster mode and sharded pub/sub")
	s.List(&c.SentinelAddrs, "redis-sentinel-addrs", "REDIS_SENTINEL_ADDRS", "", "comma-separated Sentinel addresses (host:port); the primary is the one they name, followed across failovers (not with cluster addresses)")
	s.String(&c.SentinelMaster, "redis-sentinel-master", "REDIS_SENTINEL_MASTER", "", "master name the Sentinels monitor (empty: "+DefaultSentinelMaster+"; only with sentinel addresses)")
	s.String(&c.KeyPrefix, "redis-prefix", "REDIS_PREFIX", "likes:", "prefix of every Redis key and channel")
	s.Duration(&c.Timeout, "redis-timeout", "REDIS_TIMEOUT", 2*time.Second, "Redis dial/read/write timeout")
	s.Int(&c.PoolSize, "redis-pool", "REDIS_POOL_SIZE", 0, "Redis connection pool size per node (0 = go-redis default, 10 per CPU)")
	s.String(&c.Username, "redis-username", "REDIS_USERNAME", "", "ACL user to connect to Redis and its Sentinels as (empty: the default user, or the URL's)")
	s.String(&c.PasswordFile, "redis-password-file", "REDIS_PASSWORD_FILE", "", "file holding the password of REDIS_USERNAME (for Redis and its Sentinels alike)")
}

// Validate reports settings that contradict each other. Cluster and Sentinel are two ways of
// finding the servers, and guessing which one was meant would send likes to the wrong place.
func (c Config) Validate() error {
	switch {
	case len(c.ClusterAddrs) > 0 && len(c.SentinelAddrs) > 0:
		return errors.New("redis: cluster addresses (REDIS_CLUSTER_ADDRS) and sentinel addresses (REDIS_SENTINEL_ADDRS) are both set; set one: cluster addresses for a Redis Cluster, sentinel addresses for a primary with replicas")
	case c.PasswordFile != "" && c.Username == "":
		return errors.New("redis: a password file (REDIS_PASSWORD_FILE) is set without a user (REDIS_USERNAME); set the user its password belongs to")
	case c.SentinelMaster != "" && len(c.SentinelAddrs) == 0:
		return errors.New("redis: a sentinel master name (REDIS_SENTINEL_MASTER) is set without sentinel addresses (REDIS_SENTINEL_ADDRS); set the addresses too, or unset the name")
	}
	for _, a := range c.SentinelAddrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("redis: sentinel address %q must be host:port: %w", a, err)
		}
	}
	return nil
}

// Mode names the topology the settings select: "cluster", "sentinel" or "single".
func (c Config) Mode() string {
	switch {
	case c.Cluster():
		return "cluster"
	case c.Sentinel():
		return "sentinel"
	}
	return "single"
}

// Cluster reports whether cluster mode is configured.
func (c Config) Cluster() bool { return len(c.ClusterAddrs) > 0 }

// Sentinel reports whether the primary is found through Sentinel.
func (c Config) Sentinel() bool { return len(c.SentinelAddrs) > 0 }

// New returns a client: a ClusterClient in cluster mode, otherwise a Client, which in sentinel
// mode is go-redis's failover client (it asks the Sentinels for the primary on every dial and
// drops its connections to the old primary when they announce a new one).
func New(c Config) (redis.UniversalClient, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	password, err := c.password()
	if err != nil {
		return nil, err
	}
	if c.Cluster() {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:        c.ClusterAddrs,
			Username:     c.Username,
			Password:     password,
			Dialer:       dialer(c.Timeout),
			DialTimeout:  c.Timeout,
			ReadTimeout:  c.Timeout,
			WriteTimeout: c.Timeout,
			PoolSize:     c.PoolSize,
			// A request's deadline must bound its Redis call even when Redis stalls mid-read.
			ContextTimeoutEnabled: true,
		}), nil
	}
	if c.Sentinel() {
		return newFailover(c, password), nil
	}
	opt, err := redis.ParseURL(c.URL)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	if c.Username != "" {
		opt.Username, opt.Password = c.Username, password
	}
	opt.Dialer = dialer(c.Timeout)
	opt.DialTimeout = c.Timeout
	opt.ReadTimeout = c.Timeout
	opt.WriteTimeout = c.Timeout
	opt.ContextTimeoutEnabled = true // a request's deadline bounds its Redis call
	if c.PoolSize > 0 {
		opt.PoolSize = c.PoolSize
	}
	return redis.NewClient(opt), nil
}

// newFailover returns go-redis's failover client. The dialer (TCP_USER_TIMEOUT) serves both the
// connections to the primary and those to the Sentinels, whose pub/sub announces failovers: a
// Sentinel whose path vanished must be given up as quickly as a primary.
func newFailover(c Config, password string) *redis.Client {
	master := c.SentinelMaster
	if master == "" {
		master = DefaultSentinelMaster
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    master,
		SentinelAddrs: c.SentinelAddrs,
		Username:      c.Username,
		Password:      password,
		// The same user on the Sentinels: they refuse a client that does not authenticate.
		SentinelUsername: c.Username,
		SentinelPassword: password,
		Dialer:           dialer(c.Timeout),
		DialTimeout:      c.Timeout,
		ReadTimeout:      c.Timeout,
		WriteTimeout:     c.Timeout,
		PoolSize:         c.PoolSize,
		// A request's deadline must bound its Redis call even when Redis stalls mid-read.
		ContextTimeoutEnabled: true,
	})
}

// NewSentinels returns a client of each Sentinel, with the user, password and timeouts the failover
// client uses for them, and the master name they monitor; nil when c is not Sentinel mode. The
// caller closes the clients.
func NewSentinels(c Config) (clients []*redis.SentinelClient, master string, err error) {
	if !c.Sentinel() {
		return nil, "", nil
	}
	password, err := c.password()
	if err != nil {
		return nil, "", err
	}
	master = c.SentinelMaster
	if master == "" {
		master = DefaultSentinelMaster
	}
	for _, addr := range c.SentinelAddrs {
		clients = append(clients, redis.NewSentinelClient(&redis.Options{
			Addr: addr, Username: c.Username, Password: password, Dialer: dialer(c.Timeout),
			DialTimeout: c.Timeout, ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
			PoolSize: 2, ContextTimeoutEnabled: true,
		}))
	}
	return clients, master, nil
}

// password reads PasswordFile: its content without the line end that editors and `echo` add.
func (c Config) password() (string, error) {
	if c.PasswordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("redis: the password of %s (REDIS_PASSWORD_FILE): %w", c.Username, err)
	}
	p := strings.TrimRight(string(b), "\r\n")
	if p == "" {
		return "", fmt.Errorf("redis: the password file %s (REDIS_PASSWORD_FILE) is empty", c.PasswordFile)
	}
	return p, nil
}

// Ping checks that Redis answers; through Sentinel, that the current primary does. On a cluster
// it asks every master and succeeds if any answers: one PING would reach a node at random
// (readiness would flip at random while a master is down), and requiring all masters would take
// every replica of a service out of its balancer at once, turning the loss of one shard into a
// total outage.
func Ping(ctx context.Context, c redis.UniversalClient) error {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return c.Ping(ctx).Err()
	}
	var mu sync.Mutex
	var answered bool
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if err := m.Ping(ctx).Err(); err != nil {
			return err
		}
		mu.Lock()
		answered = true
		mu.Unlock()
		return nil
	})
	if answered {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("no cluster master answered")
	}
	return err
}

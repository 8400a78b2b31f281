// Package redisconn turns configuration into a go-redis client, so that both services read the
// same settings (REDIS_URL for one server, REDIS_CLUSTER_ADDRS for a cluster) the same way.
package redisconn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/envflag"
)

// Config selects and tunes the Redis client.
type Config struct {
	URL          string
	ClusterAddrs []string
	KeyPrefix    string
	Timeout      time.Duration // dial, read and write timeout of one command
	PoolSize     int
}

// Register defines the Redis flags on s.
func (c *Config) Register(s *envflag.Set) {
	s.String(&c.URL, "redis-url", "REDIS_URL", "redis://127.0.0.1:6379/0", "Redis server URL (ignored when cluster addresses are set)")
	s.List(&c.ClusterAddrs, "redis-cluster-addrs", "REDIS_CLUSTER_ADDRS", "", "comma-separated Redis Cluster seed addresses; enables cluster mode and sharded pub/sub")
	s.String(&c.KeyPrefix, "redis-prefix", "REDIS_PREFIX", "likes:", "prefix of every Redis key and channel")
	s.Duration(&c.Timeout, "redis-timeout", "REDIS_TIMEOUT", 2*time.Second, "Redis dial/read/write timeout")
	s.Int(&c.PoolSize, "redis-pool", "REDIS_POOL_SIZE", 0, "Redis connection pool size per node (0 = go-redis default, 10 per CPU)")
}

// Cluster reports whether cluster mode is configured.
func (c Config) Cluster() bool { return len(c.ClusterAddrs) > 0 }

// New returns a client: a ClusterClient in cluster mode, a Client otherwise.
func New(c Config) (redis.UniversalClient, error) {
	if c.Cluster() {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:        c.ClusterAddrs,
			Dialer:       dialer(c.Timeout),
			DialTimeout:  c.Timeout,
			ReadTimeout:  c.Timeout,
			WriteTimeout: c.Timeout,
			PoolSize:     c.PoolSize,
			// A request's deadline must bound its Redis call even when Redis stalls mid-read.
			ContextTimeoutEnabled: true,
		}), nil
	}
	opt, err := redis.ParseURL(c.URL)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
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

// Ping checks that Redis answers. On a cluster it asks every master and succeeds if any
// answers: one PING would reach a node at random (readiness would flip at random while a master
// is down), and requiring all masters would take every replica of a service out of its balancer
// at once, turning the loss of one shard into a total outage.
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

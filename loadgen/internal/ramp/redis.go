package ramp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/loadgen/internal/rediscpu"
	"github.com/likes/likes/loadgen/internal/report"
	"github.com/likes/likes/pkg/rediskeys"
)

// redisView reads what a ramp reports of the deployment's Redis: its CPU time and how many
// subscribers each post's channel has. On a Cluster both are summed over every node (primaries
// and replicas): a node may serve subscriptions of its own, and replicas spend CPU on each write.
//
// Behind Sentinels the view reads the primary alone, found through them as the services find it,
// so a ramp run across a failover reads the new primary: the replicas hold no subscriptions.
type redisView struct {
	client  *redis.Client        // the --redis server, or the Sentinels' primary
	cluster *redis.ClusterClient // nil unless that server is a Cluster node
	keys    rediskeys.Scheme
}

func newRedisView(ctx context.Context, cfg Config) *redisView {
	v := &redisView{keys: rediskeys.New(cfg.RedisPrefix)}
	if len(cfg.RedisSentinels) > 0 {
		v.client = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: cfg.RedisSentinelMaster, SentinelAddrs: cfg.RedisSentinels,
			Username: cfg.RedisUsername, Password: cfg.RedisPassword, SentinelUsername: cfg.RedisUsername, SentinelPassword: cfg.RedisPassword})
		return v
	}
	v.client = redis.NewClient(&redis.Options{Addr: cfg.Redis, Username: cfg.RedisUsername, Password: cfg.RedisPassword})
	if info, err := v.client.Info(ctx, "cluster").Result(); err == nil && strings.Contains(info, "cluster_enabled:1") {
		v.cluster = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cfg.Redis}, Username: cfg.RedisUsername, Password: cfg.RedisPassword})
	}
	return v
}

// keyClient is the client of the deployment's keys (the session keys): on a Cluster, one that
// finds each key's node.
func (v *redisView) keyClient() redis.UniversalClient {
	if v.cluster != nil {
		return v.cluster
	}
	return v.client
}

func (v *redisView) close() {
	v.client.Close()
	if v.cluster != nil {
		v.cluster.Close()
	}
}

// cpu returns the CPU time Redis has used so far, all of a Cluster's nodes together.
func (v *redisView) cpu(ctx context.Context) (time.Duration, error) {
	if v.cluster == nil {
		return rediscpu.Read(ctx, v.client)
	}
	var mu sync.Mutex
	var total time.Duration
	err := v.cluster.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		cpu, err := rediscpu.Read(ctx, c)
		mu.Lock()
		total += cpu
		mu.Unlock()
		return err
	})
	return total, err
}

// subscribers returns each post's subscriber count: PUBSUB NUMSUB on one server; on a Cluster,
// PUBSUB SHARDNUMSUB (fanout nodes use sharded subscriptions there) on every node, summed.
func (v *redisView) subscribers(ctx context.Context, posts []string) ([]int64, error) {
	channels := make([]string, len(posts))
	for p, id := range posts {
		channels[p] = v.keys.Channel(id)
	}
	out := make([]int64, len(posts))
	if v.cluster == nil {
		n, err := v.client.PubSubNumSub(ctx, channels...).Result()
		for p, ch := range channels {
			out[p] = n[ch]
		}
		return out, err
	}
	var mu sync.Mutex
	err := v.cluster.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		// One channel a call: a node answers only for its own slots' channels.
		var errs []error
		for p, ch := range channels {
			n, err := c.PubSubShardNumSub(ctx, ch).Result()
			errs = append(errs, err)
			mu.Lock()
			out[p] += n[ch]
			mu.Unlock()
		}
		return errors.Join(errs...)
	})
	return out, err
}

// holders returns, for each post, how many nodes hold viewers of it and how many viewers, when
// viewers 0 .. viewers-1 are connected: viewer i watches post i mod posts (and the feed-1 after
// it) on node (i / posts) mod nodes, as the workers place them.
func holders(viewers, posts, nodes, feed int) (nodesOf, viewersOf []int) {
	seen := make([][]bool, posts)
	for p := range seen {
		seen[p] = make([]bool, nodes)
	}
	nodesOf, viewersOf = make([]int, posts), make([]int, posts)
	for i := range viewers {
		node := (i / posts) % nodes
		for k := range max(feed, 1) {
			p := (i + k) % posts
			viewersOf[p]++
			if !seen[p][node] {
				seen[p][node] = true
				nodesOf[p]++
			}
		}
	}
	return nodesOf, viewersOf
}

// compareSubscribers sums up subs against the nodes holding each post.
func compareSubscribers(subs []int64, nodesOf, viewersOf []int) *report.Subscribers {
	s := &report.Subscribers{Min: -1}
	for p, n := range subs {
		if s.Min < 0 || n < s.Min {
			s.Min = n
		}
		s.Max = max(s.Max, n)
		s.NodesMax = max(s.NodesMax, nodesOf[p])
		s.Viewers = max(s.Viewers, viewersOf[p])
		if n != int64(nodesOf[p]) {
			s.Mismatch++
		}
	}
	return s
}

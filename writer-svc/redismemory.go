package main

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// redisMemoryCollector exports the memory of the Redis the writer writes to (the primary, through
// the Sentinels), read with INFO memory at scrape time: a data node at its maxmemory refuses
// likes (noeviction: 503s, never an evicted like), and LikesRedisMemoryNearLimit fires before
// that. One INFO per scrape per replica, bounded by scrapeTimeout; a scrape that cannot ask
// Redis exports nothing (the writer's Redis errors have their own alert).
type redisMemoryCollector struct {
	rdb redis.UniversalClient
}

var (
	redisUsedMemoryDesc = prometheus.NewDesc("likes_writer_redis_used_memory_bytes",
		"Memory the Redis primary uses for its data (INFO memory used_memory), read at scrape time.", nil, nil)
	redisMaxMemoryDesc = prometheus.NewDesc("likes_writer_redis_maxmemory_bytes",
		"The Redis primary's maxmemory (0: unbounded); past it writes are refused and likes answered 503.", nil, nil)
)

// scrapeTimeout bounds the INFO call of one scrape.
const scrapeTimeout = time.Second

func (c redisMemoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- redisUsedMemoryDesc
	ch <- redisMaxMemoryDesc
}

func (c redisMemoryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	info := c.rdb.InfoMap(ctx, "memory")
	if info.Err() != nil {
		return
	}
	used, errUsed := strconv.ParseFloat(info.Item("Memory", "used_memory"), 64)
	limit, errMax := strconv.ParseFloat(info.Item("Memory", "maxmemory"), 64)
	if errUsed == nil && errMax == nil {
		ch <- prometheus.MustNewConstMetric(redisUsedMemoryDesc, prometheus.GaugeValue, used)
		ch <- prometheus.MustNewConstMetric(redisMaxMemoryDesc, prometheus.GaugeValue, limit)
	}
}

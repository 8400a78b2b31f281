package redisconn

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/envflag"
)

// load reads a Config from env as the services do (Register, Parse), then validates it.
func load(env map[string]string) (Config, error) {
	var c Config
	s := envflag.New("test", func(k string) string { return env[k] }, io.Discard)
	c.Register(s)
	if err := s.Parse(nil); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func TestSettingsSelectOneTopology(t *testing.T) {
	tests := []struct {
		name       string
		give       map[string]string
		wantMode   string
		wantMaster string
		wantAddrs  []string
	}{
		{"nothing set: the local server", nil, "single", "", nil},
		{"url", map[string]string{"REDIS_URL": "redis://r:6379/0"}, "single", "", nil},
		{"cluster wins over url, as before", map[string]string{
			"REDIS_URL": "redis://r:6379/0", "REDIS_CLUSTER_ADDRS": "a:7000,b:7000",
		}, "cluster", "", []string{"a:7000", "b:7000"}},
		{"sentinel with the default master", map[string]string{
			"REDIS_SENTINEL_ADDRS": "s1:26379, s2:26379,s3:26379",
		}, "sentinel", "", []string{"s1:26379", "s2:26379", "s3:26379"}},
		{"sentinel wins over url", map[string]string{
			"REDIS_URL": "redis://r:6379/0", "REDIS_SENTINEL_ADDRS": "s1:26379", "REDIS_SENTINEL_MASTER": "likes",
		}, "sentinel", "likes", []string{"s1:26379"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(tt.give)
			if err != nil {
				t.Fatalf("got %v; want no error", err)
			}
			if got := c.Mode(); got != tt.wantMode {
				t.Errorf("mode %q; want %q", got, tt.wantMode)
			}
			if c.SentinelMaster != tt.wantMaster {
				t.Errorf("sentinel master %q; want %q", c.SentinelMaster, tt.wantMaster)
			}
			addrs := c.ClusterAddrs
			if c.Sentinel() {
				addrs = c.SentinelAddrs
			}
			if !slices.Equal(addrs, tt.wantAddrs) {
				t.Errorf("addresses %q; want %q", addrs, tt.wantAddrs)
			}
		})
	}
}

func TestConflictingSettingsAreRejected(t *testing.T) {
	tests := []struct {
		name string
		give map[string]string
		want string
	}{
		{"cluster and sentinel", map[string]string{
			"REDIS_CLUSTER_ADDRS": "a:7000", "REDIS_SENTINEL_ADDRS": "s1:26379",
		}, "REDIS_CLUSTER_ADDRS) and sentinel addresses (REDIS_SENTINEL_ADDRS) are both set"},
		{"master without sentinels", map[string]string{"REDIS_SENTINEL_MASTER": "likes"}, "without sentinel addresses"},
		{"master without sentinels, with a cluster", map[string]string{
			"REDIS_CLUSTER_ADDRS": "a:7000", "REDIS_SENTINEL_MASTER": "likes",
		}, "without sentinel addresses"},
		{"sentinel without a port", map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379,s2"}, `"s2" must be host:port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(tt.give)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want an error containing %q", err, tt.want)
			}
			if rdb, err := New(c); err == nil {
				_ = rdb.Close()
				t.Errorf("New accepted the settings Validate rejects")
			}
		})
	}
}

// TestSentinelClientIsAPlainClient pins what the services rely on: through Sentinel, New returns
// a *redis.Client (go-redis's failover client), never a ClusterClient, so the writer publishes
// with PUBLISH and fanout's relay subscribes with classic SUBSCRIBE. No connection is made.
func TestSentinelClientIsAPlainClient(t *testing.T) {
	rdb, err := New(Config{SentinelAddrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, ok := rdb.(*redis.Client); !ok {
		t.Errorf("New returned %T; want *redis.Client", rdb)
	}
}

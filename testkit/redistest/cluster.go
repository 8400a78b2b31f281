package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
)

// Cluster is a real Redis Cluster, one redis-server process per node on loopback: masters
// without replicas (StartCluster) or each with replicas (StartClusterWithReplicas). Each node
// keeps its nodes.conf in its own directory, so a node restarted with Restart rejoins the cluster
// owning the same slots.
type Cluster struct {
	Nodes []*Server

	t        testing.TB
	masterOf map[*Server]*Server // replica -> its master when the cluster was created
}

// clusterNodeTimeout is short so that a killed master is noticed quickly, and long enough that a
// loaded test machine does not flap healthy nodes.
const clusterNodeTimeout = "3000"

// StartCluster starts masters redis-server processes in cluster mode, joins them with
// `redis-cli --cluster create` (slots split evenly, no replicas) and waits until every node reports
// cluster_state:ok. Extra arguments go to every redis-server (for example "--appendonly", "yes").
// The nodes are killed in t.Cleanup.
func StartCluster(t testing.TB, masters int, extra ...string) *Cluster {
	t.Helper()
	return startCluster(t, masters, 0, extra...)
}

// startCluster starts masters*(1+replicas) nodes and creates a cluster of them, with replicas
// replicas per master (`redis-cli --cluster create --cluster-replicas`).
func startCluster(t testing.TB, masters, replicas int, extra ...string) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not found on PATH: install it (apt-get install -y redis-tools) and rerun")
	}
	c := &Cluster{t: t}
	for i := 0; i < masters*(1+replicas); i++ {
		// The cluster bus port is chosen explicitly: the default (port+10000) may be taken or
		// beyond 65535 for a random free port.
		args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(freeport.Port(t)), "--cluster-node-timeout", clusterNodeTimeout}, extra...)
		c.Nodes = append(c.Nodes, Start(t, args...))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy()
	return c
}

// Addrs returns the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// AddrList returns the addresses comma-separated, the form REDIS_CLUSTER_ADDRS takes.
func (c *Cluster) AddrList() string { return strings.Join(c.Addrs(), ",") }

// Client returns a cluster client seeded with every node, closed at the end of the test.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// WaitHealthy waits until every running node (a killed one is left out) reports cluster_state:ok
// and agrees on which node owns every slot, failing the test after 60 seconds.
func (c *Cluster) WaitHealthy() {
	c.t.Helper()
	if err := poll.For(60*time.Second, c.healthy); err != nil {
		c.t.Fatalf("redis cluster not healthy after 60s: %v", err)
	}
}

func (c *Cluster) healthy() error {
	var first string
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		info, err := n.Do("CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr, err)
		}
		if s, _ := info.(string); !strings.Contains(s, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state not ok", n.Addr)
		}
		owners, err := slotOwners(n)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr, err)
		}
		if first == "" {
			first = owners
		} else if owners != first {
			return fmt.Errorf("%s disagrees on slot owners", n.Addr)
		}
	}
	return nil
}

// slotOwners returns n's view of the slot map as text ("start-end addr;..."), for comparing views.
func slotOwners(n *Server) (string, error) {
	slots, err := clusterSlots(n)
	if err != nil {
		return "", err
	}
	lines := make([]string, 0, len(slots))
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("%d-%d %s", s.Start, s.End, s.Nodes[0].Addr))
	}
	slices.Sort(lines)
	return strings.Join(lines, ";"), nil
}

// NodeFor returns the node that owns key's slot, asking the first running node.
func (c *Cluster) NodeFor(key string) *Server {
	c.t.Helper()
	var last error
	for _, n := range c.Nodes {
		res, err := n.Do("CLUSTER", "KEYSLOT", key)
		if err != nil {
			last = err
			continue
		}
		slot, _ := res.(int64)
		if owner := c.slotOwner(n, int(slot)); owner != nil {
			return owner
		}
	}
	c.t.Fatalf("no node owns the slot of %q (%v)", key, last)
	return nil
}

// clusterSlots returns n's CLUSTER SLOTS.
func clusterSlots(n *Server) ([]redis.ClusterSlot, error) {
	cl := redis.NewClient(&redis.Options{Addr: n.Addr})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	//nolint:staticcheck // SA1019: CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every version we support.
	return cl.ClusterSlots(ctx).Result()
}

// slotOwner returns the node that owns slot in asked's view, or nil.
func (c *Cluster) slotOwner(asked *Server, slot int) *Server {
	slots, err := clusterSlots(asked)
	if err != nil {
		return nil
	}
	for _, s := range slots {
		if slot >= s.Start && slot <= s.End && len(s.Nodes) > 0 {
			for _, n := range c.Nodes {
				if n.Addr == s.Nodes[0].Addr {
					return n
				}
			}
		}
	}
	return nil
}

// Index returns the position of n in Nodes, or -1.
func (c *Cluster) Index(n *Server) int {
	for i, x := range c.Nodes {
		if x == n {
			return i
		}
	}
	return -1
}

// Kill crashes node i (SIGKILL). The other nodes keep serving their slots; until it is back, its
// slots are unavailable and, after the node timeout, the cluster reports itself down.
func (c *Cluster) Kill(i int) { c.Nodes[i].Kill() }

// Restart starts node i again on the same port and directory, so it reloads its nodes.conf and
// rejoins owning its slots, and waits until the whole cluster is healthy again.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.Nodes[i].Restart()
	c.WaitHealthy()
}

// Slot returns key's hash slot, as the cluster computes it.
func (c *Cluster) Slot(key string) int {
	c.t.Helper()
	for _, n := range c.Nodes {
		if res, err := n.Do("CLUSTER", "KEYSLOT", key); err == nil {
			slot, _ := res.(int64)
			return int(slot)
		}
	}
	c.t.Fatalf("no node answered CLUSTER KEYSLOT %q", key)
	return -1
}

// MigrateSlot moves slot, with its keys, from the node that owns it to node dst, the way
// `redis-cli --cluster reshard` does (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE on every node),
// and waits until the cluster is healthy and agrees. Redis drops the sharded subscriptions of
// the slot on the old owner, telling each subscriber with a `sunsubscribe` message.
func (c *Cluster) MigrateSlot(slot int, dst *Server) {
	c.t.Helper()
	src := c.slotOwner(dst, slot)
	if src == nil {
		c.t.Fatalf("migrate slot %d: no owner", slot)
	}
	if src == dst {
		return
	}
	id := func(n *Server) string {
		res, err := n.Do("CLUSTER", "MYID")
		if err != nil {
			c.t.Fatalf("cluster myid %s: %v", n.Addr, err)
		}
		s, _ := res.(string)
		return s
	}
	srcID, dstID := id(src), id(dst)
	must := func(n *Server, args ...any) any {
		res, err := n.Do(args...)
		if err != nil {
			c.t.Fatalf("%s %v: %v", n.Addr, args, err)
		}
		return res
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	must(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	host, port, _ := strings.Cut(dst.Addr, ":")
	for {
		keys, _ := must(src, "CLUSTER", "GETKEYSINSLOT", slot, 100).([]any)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		must(src, append(args, keys...)...)
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	must(src, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	for _, n := range c.Nodes {
		if n != src && n != dst {
			must(n, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
		}
	}
	c.WaitHealthy()
}

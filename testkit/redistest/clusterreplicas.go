package redistest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

// StartClusterWithReplicas starts a Redis Cluster of masters masters, each with replicas
// replicas, and waits until the cluster is healthy and every replica has synced and acknowledges
// its master's writes (so that a WAIT for one replica succeeds from the first like). Extra
// arguments go to every redis-server; a small "--cluster-node-timeout" (the default here is
// 3000 ms) makes a killed master fail over sooner: a replica is promoted about a node timeout
// plus a second after its master stops answering.
func StartClusterWithReplicas(t testing.TB, masters, replicas int, extra ...string) *Cluster {
	t.Helper()
	c := startCluster(t, masters, replicas, extra...)
	c.masterOf = make(map[*Server]*Server)
	for _, n := range c.Nodes {
		if m := c.roleMaster(n); m != nil {
			c.masterOf[n] = m
		}
	}
	if len(c.masterOf) != masters*replicas {
		t.Fatalf("cluster has %d replicas; want %d", len(c.masterOf), masters*replicas)
	}
	for r := range c.masterOf {
		r.WaitReplicating(t)
	}
	return c
}

// roleMaster returns the node that n replicates (ROLE), or nil when n is a master.
func (c *Cluster) roleMaster(n *Server) *Server {
	c.t.Helper()
	res, err := n.Do("ROLE")
	role, _ := res.([]any)
	if err != nil || len(role) == 0 {
		c.t.Fatalf("ROLE of %s: %v %v", n.Addr, res, err)
	}
	if role[0] != "slave" {
		return nil
	}
	if len(role) < 3 {
		c.t.Fatalf("ROLE of %s: %v", n.Addr, res)
	}
	addr := net.JoinHostPort(fmt.Sprint(role[1]), fmt.Sprint(role[2]))
	for _, m := range c.Nodes {
		if m.Addr == addr {
			return m
		}
	}
	c.t.Fatalf("%s replicates %s, not a node of this cluster", n.Addr, addr)
	return nil
}

// Masters returns the nodes that were masters when the cluster was created.
func (c *Cluster) Masters() []*Server {
	var ms []*Server
	for _, n := range c.Nodes {
		if _, replica := c.masterOf[n]; !replica {
			ms = append(ms, n)
		}
	}
	return ms
}

// WaitPromoted waits until a replica of old (a master, killed by the test) has been promoted: it
// reports itself master, and every running node reports the cluster ok and agrees on the slot
// owners. It returns the promoted replica, failing the test after 60 seconds.
func (c *Cluster) WaitPromoted(old *Server) *Server {
	c.t.Helper()
	var promoted *Server
	err := poll.For(60*time.Second, func() error {
		promoted = nil
		for r, m := range c.masterOf {
			if m != old || !r.Running() {
				continue
			}
			if res, err := r.Do("ROLE"); err == nil {
				if role, _ := res.([]any); len(role) > 0 && role[0] == "master" {
					promoted = r
				}
			}
		}
		if promoted == nil {
			return fmt.Errorf("no replica of %s promoted yet", old.Addr)
		}
		return c.healthy()
	})
	if err != nil {
		c.t.Fatalf("failover of %s: %v", old.Addr, err)
	}
	return promoted
}

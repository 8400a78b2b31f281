package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
)

// Sentinel is a real replicated Redis on loopback: one primary, its replicas (--replicaof) and
// three Sentinels that monitor it and promote a replica when it dies, each a redis-server
// process. Which node is the primary changes with failovers: ask Primary.
type Sentinel struct {
	Master    string    // the name the Sentinels monitor the primary under
	Nodes     []*Server // the data nodes; Nodes[0] started as the primary, the rest as its replicas
	Sentinels []*Server // the three Sentinel processes

	t       testing.TB
	clients []*redis.SentinelClient // clients[i] talks to Sentinels[i]
}

// The Sentinels' timing is the deployments' (docker-compose.yml, deploy/redis/likes-redis.sh), so
// that a test fails over as a deployment does: short enough that a killed primary is replaced
// within seconds (Redis's defaults, 30 s to notice and 3 minutes of failover timeout, are longer
// than any test), long enough that a loaded machine does not fail over a healthy primary, and
// down-after above the second a Sentinel may take to reach a primary it has just switched to (at
// 1 s it could call that primary down and promote a second replica: deploy/partitiontest's
// TestSentinelTiming). A failover that fails (two Sentinels asked for votes at once and split
// them) is retried twice the failover timeout after it began: 1.5 s to notice and 4 s to retry
// leave a second try room within the 10 s that e2e's TestFailover allows, where 3 s (6 s to
// retry) did not.
//
// One of Sentinel's periods is shortened, here only (SENTINEL DEBUG, which a restarted Sentinel
// forgets, so the deployments keep Redis's): publish-period. Hellos carry a new configuration to
// the other Sentinels, and a node that claims the wrong role is reconfigured only after four of
// them. At Redis's 2 s the Sentinels that did not lead a failover name the dead primary up to 2 s
// longer, and clients dial it for that long: writer-svc/internal/ackquorum's tests then end with
// go-redis still redialing it, which goleak fails. The ping period was shortened too while
// down-after was 1 s, equal to it; at 1.5 s it need not be.
const (
	sentinelDownAfter       = "1500" // ms without a valid reply before a Sentinel calls a node down
	sentinelFailoverTimeout = "2000" // ms a failover may take; a failed one is retried after twice this
	sentinelQuorum          = "2"    // Sentinels that must agree the primary is down; of 3
	sentinelCount           = 3
)

// sentinelDebug are the SENTINEL DEBUG periods, in ms, set on every Sentinel at start.
var sentinelDebug = []string{
	"publish-period", "250", // between hello messages (Redis's default 2000)
}

// StartSentinel starts a primary, replicas replicas of it and three Sentinels monitoring it under
// the name "mymaster", and waits until the replicas are in sync and every Sentinel knows the
// primary, each replica and the other Sentinels, so that a failover can start at once. Extra
// arguments go to every data node (for example "--appendonly", "yes"). Everything is killed in
// t.Cleanup.
func StartSentinel(t testing.TB, replicas int, extra ...string) *Sentinel {
	t.Helper()
	s := &Sentinel{Master: "mymaster", t: t}
	// A replica's first sync would otherwise wait 5 s for other replicas to share it.
	extra = append([]string{"--repl-diskless-sync-delay", "0"}, extra...)
	primary := Start(t, extra...)
	s.Nodes = append(s.Nodes, primary)
	for range replicas {
		args := append(append([]string{}, extra...), "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
		s.Nodes = append(s.Nodes, Start(t, args...))
	}
	// Sentinels learn the replicas from the primary's INFO, which they read at once and then
	// every 10 s: start them once the replicas are attached.
	if err := poll.For(30*time.Second, func() error { return s.replicasInSync(primary) }); err != nil {
		t.Fatalf("replicas not in sync after 30s: %v", err)
	}
	for range sentinelCount {
		s.Sentinels = append(s.Sentinels, s.startSentinel(primary.port))
	}
	for _, sn := range s.Sentinels {
		s.clients = append(s.clients, redis.NewSentinelClient(&redis.Options{
			Addr: sn.Addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		}))
	}
	t.Cleanup(func() {
		for _, c := range s.clients {
			_ = c.Close()
		}
	})
	t.Cleanup(s.logIfFailed)
	for _, sn := range s.Sentinels {
		args := []any{"SENTINEL", "DEBUG"}
		for _, a := range sentinelDebug {
			args = append(args, a)
		}
		if _, err := sn.Do(args...); err != nil {
			t.Fatalf("sentinel %s: SENTINEL DEBUG %v: %v", sn.Addr, sentinelDebug, err)
		}
	}
	s.WaitHealthy()
	return s
}

// startSentinel runs one Sentinel from a config file of its own (a Sentinel rewrites its file as
// it learns the topology), monitoring the primary on primaryPort.
func (s *Sentinel) startSentinel(primaryPort int) *Server {
	dir := s.t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	return start(s.t, "+monitor master", func(port int) []string {
		m := s.Master
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %s\n", port, dir) +
			"sentinel resolve-hostnames no\n" +
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %s\n", m, primaryPort, sentinelQuorum) +
			fmt.Sprintf("sentinel down-after-milliseconds %s %s\n", m, sentinelDownAfter) +
			fmt.Sprintf("sentinel failover-timeout %s %s\n", m, sentinelFailoverTimeout) +
			fmt.Sprintf("sentinel parallel-syncs %s 1\n", m)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			s.t.Fatalf("write sentinel config: %v", err)
		}
		return []string{conf, "--sentinel"}
	})
}

// logIfFailed logs every Sentinel's log tail if the test failed: the elections and promotions
// they did are what explains a failover that took too long.
func (s *Sentinel) logIfFailed() {
	if !s.t.Failed() {
		return
	}
	for _, sn := range s.Sentinels {
		s.t.Logf("sentinel %s log (tail):\n%s", sn.Addr, strings.Join(sn.LogTail(), "\n"))
	}
}

// SentinelAddrs returns the Sentinels' host:port addresses.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		addrs[i] = sn.Addr
	}
	return addrs
}

// AddrList returns the Sentinels' addresses comma-separated, the form REDIS_SENTINEL_ADDRS takes.
func (s *Sentinel) AddrList() string { return strings.Join(s.SentinelAddrs(), ",") }

// Primary returns the node the first answering Sentinel names as the primary (SENTINEL
// get-master-addr-by-name), failing the test if none answers or it names no node of s. During a
// failover the Sentinel that leads it names the promoted replica before the others do: after a
// kill, use WaitPromoted.
func (s *Sentinel) Primary() *Server {
	s.t.Helper()
	var last error
	for i, sn := range s.Sentinels {
		if !sn.Running() {
			continue
		}
		n, err := s.primaryOf(s.clients[i])
		if err == nil {
			return n
		}
		last = err
	}
	s.t.Fatalf("no sentinel names the primary of %s: %v", s.Master, last)
	return nil
}

// KillPrimary crashes the current primary (SIGKILL) and returns it. The Sentinels notice after
// 1.5 s and promote a replica: WaitPromoted waits for that.
func (s *Sentinel) KillPrimary() *Server {
	s.t.Helper()
	p := s.Primary()
	p.Kill()
	return p
}

// WaitPromoted waits until every running Sentinel names the same primary, other than old, and
// that node says it is a master, and returns it. It fails the test after 30 seconds.
func (s *Sentinel) WaitPromoted(old *Server) *Server {
	s.t.Helper()
	var p *Server
	err := poll.For(30*time.Second, func() error {
		var err error
		if p, err = s.agreedPrimary(); err != nil {
			return err
		}
		if p == old {
			return fmt.Errorf("sentinels still name %s", old.Addr)
		}
		return isRole(p, "master")
	})
	if err != nil {
		s.t.Fatalf("no replica promoted within 30s: %v", err)
	}
	return p
}

// WaitHealthy waits until the Sentinels agree on a running primary, every other running node
// replicates it with its link up, and every running Sentinel sees the primary up, each running
// replica and all the other Sentinels. It fails the test after 60 seconds.
func (s *Sentinel) WaitHealthy() {
	s.t.Helper()
	if err := poll.For(60*time.Second, s.healthy); err != nil {
		s.t.Fatalf("sentinel topology not healthy after 60s: %v", err)
	}
}

func (s *Sentinel) healthy() error {
	p, err := s.agreedPrimary()
	if err != nil {
		return err
	}
	if err := isRole(p, "master"); err != nil {
		return err
	}
	if err := s.replicasInSync(p); err != nil {
		return err
	}
	for i, sn := range s.Sentinels {
		if sn.Running() {
			if err := s.sentinelSeesAll(s.clients[i], p); err != nil {
				return fmt.Errorf("sentinel %s: %w", sn.Addr, err)
			}
		}
	}
	return nil
}

// agreedPrimary returns the node every running Sentinel names as the primary, or an error if they
// differ or one cannot say.
func (s *Sentinel) agreedPrimary() (*Server, error) {
	var agreed *Server
	for i, sn := range s.Sentinels {
		if !sn.Running() {
			continue
		}
		p, err := s.primaryOf(s.clients[i])
		if err != nil {
			return nil, fmt.Errorf("sentinel %s: %w", sn.Addr, err)
		}
		if agreed != nil && p != agreed {
			return nil, fmt.Errorf("sentinels name %s and %s", agreed.Addr, p.Addr)
		}
		agreed = p
	}
	if agreed == nil {
		return nil, fmt.Errorf("no sentinel running")
	}
	return agreed, nil
}

// primaryOf returns the node sentinel c names as the primary.
func (s *Sentinel) primaryOf(c *redis.SentinelClient) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hp, err := c.GetMasterAddrByName(ctx, s.Master).Result()
	if err != nil {
		return nil, err
	}
	if len(hp) != 2 {
		return nil, fmt.Errorf("get-master-addr-by-name answered %q", hp)
	}
	return s.node(net.JoinHostPort(hp[0], hp[1]))
}

// node returns the data node listening on addr.
func (s *Sentinel) node(addr string) (*Server, error) {
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%s is none of the data nodes", addr)
}

// replicasInSync checks that every running node other than p replicates p with its link up.
func (s *Sentinel) replicasInSync(p *Server) error {
	for _, n := range s.Nodes {
		if n == p || !n.Running() {
			continue
		}
		info, err := replicationInfo(n)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr, err)
		}
		if info["master_port"] != strconv.Itoa(p.port) || info["master_link_status"] != "up" {
			return fmt.Errorf("%s: master port %s link %s; want %d up", n.Addr,
				info["master_port"], info["master_link_status"], p.port)
		}
	}
	return nil
}

// sentinelSeesAll checks that sentinel c sees primary p up, every other running node as a
// healthy replica, and all the other Sentinels.
func (s *Sentinel) sentinelSeesAll(c *redis.SentinelClient, p *Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.Master(ctx, s.Master).Result()
	if err != nil {
		return err
	}
	if m["flags"] != "master" {
		return fmt.Errorf("primary %s flags %q; want master", p.Addr, m["flags"])
	}
	if want := strconv.Itoa(len(s.Sentinels) - 1); m["num-other-sentinels"] != want {
		return fmt.Errorf("knows %s other sentinels; want %s", m["num-other-sentinels"], want)
	}
	replicas, err := c.Replicas(ctx, s.Master).Result()
	if err != nil {
		return err
	}
	flags := make(map[string]string, len(replicas))
	for _, r := range replicas {
		flags[net.JoinHostPort(r["ip"], r["port"])] = r["flags"]
	}
	for _, n := range s.Nodes {
		if n != p && n.Running() && flags[n.Addr] != "slave" {
			return fmt.Errorf("replica %s flags %q; want slave", n.Addr, flags[n.Addr])
		}
	}
	return nil
}

// isRole checks that n's INFO replication reports role.
func isRole(n *Server, role string) error {
	info, err := replicationInfo(n)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Addr, err)
	}
	if info["role"] != role {
		return fmt.Errorf("%s: role %s; want %s", n.Addr, info["role"], role)
	}
	return nil
}

// replicationInfo returns n's INFO replication fields.
func replicationInfo(n *Server) (map[string]string, error) {
	res, err := n.Do("INFO", "replication")
	if err != nil {
		return nil, err
	}
	text, _ := res.(string)
	fields := make(map[string]string)
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

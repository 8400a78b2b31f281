package partitiontest

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/likehistory"
	"github.com/likes/likes/testkit/netnstest"
	"github.com/likes/likes/testkit/poll"
)

// clusterNodeTimeout is the Cluster's cluster-node-timeout in ms: a master silent that long is
// suspected, its replica promoted about a second later, and a master that cannot reach a
// majority of masters stops taking writes. Short, so that a 5 s partition crosses it.
const clusterNodeTimeout = "2000"

// shardedCluster is a Redis Cluster of 3 masters with a replica each and two writers, every
// process a host of its own; procs starts and keeps their processes (it has no Sentinels).
type shardedCluster struct {
	t       *testing.T
	procs   *cluster
	nodes   [6]*netnstest.Host
	writers [2]*netnstest.Host // writer-a, writer-b
	clients [2]likehistory.Client
}

// startShardedCluster starts six Cluster nodes, creates the cluster with `redis-cli --cluster
// create --cluster-replicas 1` from node-0, and starts both writers once every node reports
// cluster_state:ok with every replica linked.
func startShardedCluster(t *testing.T, binDir string) *shardedCluster {
	t.Helper()
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (apt-get install redis-server)", tool, err)
		}
	}
	bin, err := buildWriter(binDir)
	if err != nil {
		t.Fatal(err)
	}
	c := &shardedCluster{t: t, procs: &cluster{t: t, net: netnstest.New(t), dir: t.TempDir(), procs: map[*netnstest.Host]*proc{}}}
	var addrs []string
	for i := range c.nodes {
		h := c.procs.net.Host(fmt.Sprintf("node-%d", i))
		c.nodes[i] = h
		dir := filepath.Join(c.procs.dir, h.Name)
		args := append([]string{"--port", "6379", "--dir", dir, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", clusterNodeTimeout,
			"--cluster-announce-ip", h.Addr.String()}, nodeArgs...)
		c.procs.start(h, dir, nil, "redis-server", args...)
		addrs = append(addrs, h.HostPort(6379))
	}
	poll.Check(t, 20*time.Second, func() error {
		for _, h := range c.nodes {
			if _, err := redisDo(h.HostPort(6379), "ping"); err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
		}
		return nil
	})
	create := append([]string{"60", "redis-cli", "--cluster", "create"}, addrs...)
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := c.nodes[0].Command("timeout", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	poll.Check(t, 60*time.Second, c.whole)
	for i, name := range []string{"writer-a", "writer-b"} {
		h := c.procs.net.Host(name)
		c.writers[i] = h
		listen := h.HostPort(8080)
		c.procs.start(h, filepath.Join(c.procs.dir, name), []string{
			"REDIS_CLUSTER_ADDRS=" + strings.Join(addrs, ","), "REDIS_ACK_REPLICAS=" + ackReplicas(true),
			"TRUST_USER_HEADER=true", "LISTEN_ADDR=" + listen,
			"LIKE_ADDR_RATE=off", "READ_ADDR_RATE=off", "NEW_POST_RATE=off", "NEW_POST_ADDR_RATE=off",
		}, bin)
		c.clients[i] = likehistory.Client{URL: "http://" + listen, HTTP: &http.Client{Timeout: writerTimeout + 2*time.Second}}
	}
	poll.Check(t, 60*time.Second, func() error {
		for i, cl := range c.clients {
			if op := cl.Change(likehistory.NewRecorder(), 0, likehistory.Like, "settle", "probe"); op.Outcome != likehistory.OK {
				return fmt.Errorf("%s does not acknowledge a like yet (%s)", c.writers[i].Name, op.Outcome)
			}
		}
		return nil
	})
	return c
}

// keys is the writers' key scheme (the default prefix): a post's keys share its slot.
var keys = rediskeys.New("")

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string   // master: the id of a replica's master, "-" for a master
	slots            []string // a master's slot ranges ("0-5460", "5461"), migrations left out
}

// clusterNodes is h's view of the cluster.
func clusterNodes(h *netnstest.Host) ([]clusterNode, error) {
	v, err := redisDo(h.HostPort(6379), "cluster", "nodes")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Name, err)
	}
	var nodes []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(fmt.Sprint(v)), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("%s: CLUSTER NODES line %q", h.Name, line)
		}
		n := clusterNode{id: f[0], addr: strings.Split(f[1], "@")[0], master: f[3]}
		for _, s := range f[8:] {
			if !strings.HasPrefix(s, "[") {
				n.slots = append(n.slots, s)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// whole is nil when every node reports cluster_state:ok, all agree on which master serves which
// slots and which master each replica replicates, and three replicas are linked to their masters.
func (c *shardedCluster) whole() error {
	var first string
	linked := 0
	for _, h := range c.nodes {
		v, err := redisDo(h.HostPort(6379), "cluster", "info")
		if err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		if !strings.Contains(fmt.Sprint(v), "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state not ok", h.Name)
		}
		nodes, err := clusterNodes(h)
		if err != nil {
			return err
		}
		addrOf := map[string]string{}
		for _, n := range nodes {
			addrOf[n.id] = n.addr
		}
		var roles []string
		for _, n := range nodes {
			switch {
			case len(n.slots) > 0:
				roles = append(roles, n.addr+" serves "+strings.Join(n.slots, " "))
			case n.master != "-":
				roles = append(roles, n.addr+" replicates "+addrOf[n.master])
			}
		}
		slices.Sort(roles)
		view := strings.Join(roles, "; ")
		if len(roles) != len(c.nodes) {
			return fmt.Errorf("%s knows the role of %d nodes: %s", h.Name, len(roles), view)
		}
		if first == "" {
			first = view
		} else if view != first {
			return fmt.Errorf("%s sees %s, another node %s", h.Name, view, first)
		}
		if role, err := info(h, "role"); err != nil || role != "slave" {
			continue
		}
		up, err := info(h, "master_link_status")
		if err != nil {
			return err
		}
		if up != "up" {
			return fmt.Errorf("%s: link to its master %s", h.Name, up)
		}
		linked++
	}
	if linked != 3 {
		return fmt.Errorf("%d replicas linked, want 3", linked)
	}
	return nil
}

// host is the node whose address is addr, or nil.
func (c *shardedCluster) host(addr string) *netnstest.Host {
	for _, h := range c.nodes {
		if h.HostPort(6379) == addr {
			return h
		}
	}
	return nil
}

// firstMaster is the master of the lowest-numbered node that is one, and its replica: the shard
// a scenario cuts off.
func (c *shardedCluster) firstMaster() (master, replica *netnstest.Host) {
	c.t.Helper()
	nodes, err := clusterNodes(c.nodes[0])
	if err != nil {
		c.t.Fatal(err)
	}
	byAddr := map[string]clusterNode{}
	for _, n := range nodes {
		byAddr[n.addr] = n
	}
	for _, h := range c.nodes {
		m := byAddr[h.HostPort(6379)]
		if len(m.slots) == 0 {
			continue
		}
		for _, r := range nodes {
			if r.master == m.id {
				return h, c.host(r.addr)
			}
		}
		c.t.Fatalf("master %s has no replica: %v", h.Name, nodes)
	}
	c.t.Fatalf("no master among the nodes: %v", nodes)
	return nil, nil
}

// ownerOf is the master that serves post's keys (CLUSTER KEYSLOT of its count key, against the
// masters' slot ranges in node-0's CLUSTER NODES).
func (c *shardedCluster) ownerOf(post string) (*netnstest.Host, error) {
	v, err := redisDo(c.nodes[0].HostPort(6379), "cluster", "keyslot", keys.Count(post))
	if err != nil {
		return nil, err
	}
	slot, _ := v.(int64)
	nodes, err := clusterNodes(c.nodes[0])
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		for _, r := range n.slots {
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			var from, to int64
			if _, err := fmt.Sscan(lo, &from); err != nil {
				return nil, fmt.Errorf("slot range %q: %w", r, err)
			}
			if _, err := fmt.Sscan(hi, &to); err != nil {
				return nil, fmt.Errorf("slot range %q: %w", r, err)
			}
			if slot >= from && slot <= to {
				return c.host(n.addr), nil
			}
		}
	}
	return nil, fmt.Errorf("no master serves slot %d of %s", slot, post)
}

// choosePosts names posts prefix-0, prefix-1, ... until two are served by cut and one by each
// other master: the posts of the shard cut off, and the others.
func (c *shardedCluster) choosePosts(prefix string, cut *netnstest.Host) (onCut, others []string) {
	c.t.Helper()
	per := map[*netnstest.Host]int{}
	for i := 0; len(onCut) < 2 || len(others) < 2; i++ {
		if i > 1000 {
			c.t.Fatalf("no posts found on every master: %v on %s, %v elsewhere", onCut, cut.Name, others)
		}
		post := fmt.Sprintf("%s-%d", prefix, i)
		owner, err := c.ownerOf(post)
		if err != nil {
			c.t.Fatal(err)
		}
		switch {
		case owner == cut && len(onCut) < 2:
			onCut = append(onCut, post)
		case owner != cut && per[owner] == 0:
			per[owner]++
			others = append(others, post)
		}
	}
	return onCut, others
}

// settle waits until the cluster is whole again and each post has had a like acknowledged
// through each writer; the probes (users probe-a and probe-b, clients 7 and 8) go into rec's
// history, since they change the posts.
func (c *shardedCluster) settle(rec *likehistory.Recorder, posts []string) time.Duration {
	c.t.Helper()
	start := time.Now()
	poll.Check(c.t, 90*time.Second, c.whole)
	pending := map[[2]int]bool{}
	for p := range posts {
		for w := range c.clients {
			pending[[2]int{p, w}] = true
		}
	}
	poll.Check(c.t, 60*time.Second, func() error {
		for k := range pending {
			p, w := k[0], k[1]
			op := c.clients[w].Change(rec, 7+w, likehistory.Like, posts[p], "probe-"+string(rune('a'+w)))
			rec.Record(op)
			if op.Outcome == likehistory.OK {
				delete(pending, k)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("%d posts and writers without an acknowledged like yet", len(pending))
		}
		return nil
	})
	return time.Since(start)
}

// clusterScenario is one partition of the Cluster: cut applies it, given the master cut off and
// its replica.
type clusterScenario struct {
	name string
	row  string // the partition as docs/RELIABILITY.md's table names it
	cut  func(c *shardedCluster, master, replica *netnstest.Host)
}

// rest is every host of c but those of side.
func (c *shardedCluster) rest(side ...*netnstest.Host) []*netnstest.Host {
	all := append(append([]*netnstest.Host{}, c.nodes[:]...), c.writers[:]...)
	return slices.DeleteFunc(all, func(h *netnstest.Host) bool { return slices.Contains(side, h) })
}

var clusterScenarios = []clusterScenario{
	{name: "cluster-master-and-replica-with-writer",
		row: "a master + its replica + writer-a / 2 masters + 2 replicas + writer-b",
		cut: func(c *shardedCluster, m, r *netnstest.Host) {
			side := []*netnstest.Host{m, r, c.writers[0]}
			c.procs.net.Partition(side, c.rest(side...))
		}},
	{name: "cluster-master-alone-with-writer",
		row: "a master + writer-a / the rest (its replica promoted) + writer-b",
		cut: func(c *shardedCluster, m, _ *netnstest.Host) {
			side := []*netnstest.Host{m, c.writers[0]}
			c.procs.net.Partition(side, c.rest(side...))
		}},
}

// TestClusterPartitions runs each partition of a Redis Cluster once, on a cluster of its own,
// while two clients like, unlike and read through each writer, on two posts of the shard cut off
// and one of each other shard; then as TestPartitions: an acknowledged like lost, or a refused
// one applied, fails it, and so does a history that is not linearizable.
func TestClusterPartitions(t *testing.T) {
	enabled(t)
	bin := t.TempDir()
	for _, sc := range clusterScenarios {
		t.Run(sc.name, func(t *testing.T) {
			c := startShardedCluster(t, bin)
			c.round(t, sc)
		})
	}
}

// round runs sc on c, checks the history and logs the table row.
func (c *shardedCluster) round(t *testing.T, sc clusterScenario) {
	t.Helper()
	m, r := c.firstMaster()
	onCut, others := c.choosePosts(sc.name, m)
	posts := append(append([]string{}, onCut...), others...)
	t.Logf("cut master %s (replica %s): posts %v on it, %v on the others", m.Name, r.Name, onCut, others)
	rec := likehistory.NewRecorder()
	c.settle(rec, posts)
	users := []string{"a", "b", "c", "d", "e"}
	// Clients 0 and 1 through writer-a, 2 and 3 through writer-b.
	stop := runClients(rec, 4, func(i int) likehistory.Client { return c.clients[i/2] }, posts, users)
	defer stop()                          // on a failure too: no client outlives the round
	healthy := time.NewTimer(time.Second) // a schedule: some history before the fault
	<-healthy.C
	faultAt := rec.Now()
	sc.cut(c, m, r)
	cutDone := rec.Now() // the rules went in one by one: until now, any writer may reach the cut master
	held := time.NewTimer(hold)
	<-held.C
	healAt := rec.Now()
	c.procs.net.Heal()
	settled := c.settle(rec, posts)
	owner, err := c.ownerOf(onCut[0])
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for _, post := range posts {
		rec.Record(c.clients[1].Read(rec, 9, likehistory.Count, post))
		rec.Record(c.clients[1].Read(rec, 9, likehistory.Likers, post))
	}
	ops := rec.Ops()
	lost, applied := tally(ops)
	of := func(posts []string) []likehistory.Op {
		return slices.DeleteFunc(slices.Clone(ops), func(op likehistory.Op) bool { return !slices.Contains(posts, op.Post) })
	}
	// The cut shard's posts only: the other posts' gaps say more about the clients (each waits out
	// its requests to an unreachable master, one at a time) than about the Cluster.
	gap := ackGap(of(onCut), faultAt)
	res := likehistory.Check(ops, time.Minute)
	lin := "yes"
	if !res.OK {
		lin = "**no**"
	}
	t.Logf("the cut's rules took %.2fs to put in place; after the heal %s serves the cut shard; writer-a's last acknowledgement on it came %.1fs into the cut",
		time.Duration(cutDone-faultAt).Seconds(), owner.Name, lastAck(of(onCut), []int{0, 1}, faultAt, healAt).Seconds())
	t.Logf("nemesis-row | %s | %d | %d | %.1f | %s | %d ops, settled %.1fs after heal",
		sc.row, lost, applied, gap.Seconds(), lin, len(ops), settled.Seconds())
	if lost != 0 || applied != 0 {
		t.Errorf("%s: %d acknowledged likes lost, %d refused likes applied (of %d operations)", sc.name, lost, applied, len(ops))
	}
	if !res.OK {
		broken := slices.DeleteFunc(slices.Clone(posts), func(p string) bool { return likehistory.Check(of([]string{p}), time.Minute).OK })
		t.Errorf("%s: %d operations not linearizable, on posts %v: %s", sc.name, len(ops), broken, res.Why)
		for _, op := range of(broken) { // seconds from the fault; clients 0, 1, 7 through writer-a
			t.Logf("client %d %s %s %s: %s, %.2f-%.2fs, count %d, changed %v, users %v", op.Client, op.Kind, op.Post, op.User,
				op.Outcome, time.Duration(op.Call-faultAt).Seconds(), time.Duration(op.End-faultAt).Seconds(), op.Count, op.Changed, op.Users)
		}
		path := filepath.Join("..", "..", ".run", "history-"+sc.name+".html") // kept for CI's artefacts
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil && res.Visualize(path) == nil {
			t.Logf("the history, visualised: %s", path)
		}
	}
}

// lastAck is how long after from the last like or unlike of one of clients called between from
// and to was acknowledged (0 when none was): how long a side of a partition went on acknowledging.
func lastAck(ops []likehistory.Op, clients []int, from, to int64) time.Duration {
	var last int64
	for _, op := range ops {
		if slices.Contains(clients, op.Client) && (op.Kind == likehistory.Like || op.Kind == likehistory.Unlike) &&
			op.Outcome == likehistory.OK && op.Call >= from && op.Call < to {
			last = max(last, op.End-from)
		}
	}
	return time.Duration(last)
}

package deploytest

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/routes"
	"github.com/likes/likes/testkit/routes/routestest"
)

// TestComposeTopologyBehindHAProxy runs what `docker compose up` runs, as processes: real Redis,
// two writer-svc and two fanout-svc replicas on their own loopback addresses, a DNS server that
// answers the service names with those addresses as Compose's does, and haproxy with
// compose/haproxy.cfg, changed only where Docker differs from here (listen ports, the DNS server,
// the backends' port, maxconn). It then checks discovery, least-connections balancing,
// unbuffered streaming, scale-up by DNS, and a node's drain moving its viewers to the others.
func TestComposeTopologyBehindHAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis, four services and haproxy")
	}
	haproxy := routestest.HAProxyBinary(t)
	writerBin, fanoutBin := buildProgram(t, "writer-svc"), buildProgram(t, "fanout-svc")
	rdb := redistest.Start(t)
	writerPort := freeport.On(t, "127.0.0.2", "127.0.0.3")
	fanoutPort := freeport.On(t, "127.0.0.4", "127.0.0.5", "127.0.0.6")
	logs := t.TempDir()
	env := []string{"REDIS_URL=" + rdb.URL, "LOG_LEVEL=warn"}
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		startService(t, logs, writerBin, append(env, "LISTEN_ADDR="+ip+":"+writerPort)...)
	}
	fanoutEnv := slices.Concat(env, []string{"DRAIN_WINDOW=1s", "SHUTDOWN_TIMEOUT=2s"})
	nodeA := startService(t, logs, fanoutBin, append(fanoutEnv, "LISTEN_ADDR=127.0.0.4:"+fanoutPort)...)
	startService(t, logs, fanoutBin, append(fanoutEnv, "LISTEN_ADDR=127.0.0.5:"+fanoutPort)...)

	dns := startDNS(t)
	dns.set("writer-svc", "127.0.0.2", "127.0.0.3")
	dns.set("fanout-svc", "127.0.0.4", "127.0.0.5")
	lb := startHAProxy(t, haproxy, dns.Addr, writerPort, fanoutPort)
	lb.awaitUp(t, "writer-svc", 2)
	lb.awaitUp(t, "fanout-svc", 2)

	// The public ports reach the public routes and answer the internal ones themselves (testkit/routes
	// draws the line; routestest follows the file, this is haproxy itself).
	for _, url := range []string{lb.likes + "/counts?posts=1", lb.streams + "/client/likes.js"} {
		if got := httpStatus(url); got != http.StatusOK {
			t.Errorf("GET %s through haproxy: %d; want 200", url, got)
		}
	}
	for _, base := range []string{lb.likes, lb.streams} {
		for _, p := range routes.Internal() {
			if got := httpStatus(base + p); got != http.StatusNotFound {
				t.Errorf("GET %s%s through haproxy: %d; want 404 (internal)", base, p, got)
			}
		}
	}

	post := fmt.Sprintf("deploytest%d", time.Now().UnixNano())
	var viewers []*clienttest.Viewer
	open := func(n int) {
		for range n {
			v := clienttest.Watch(t, lb.streams+"/sse/"+post)
			viewers = append(viewers, v)
			awaitConnected(t, v, post)
		}
	}
	node := func(ip string) string { return "http://" + ip + ":" + fanoutPort }

	// Least connections: ten viewers opened one after another alternate between the two nodes.
	open(10)
	awaitViewers(t, map[string]int{node("127.0.0.4"): 5, node("127.0.0.5"): 5})

	// A like through the likes port reaches every viewer through the streams port.
	like(t, lb.likes, post)
	clienttest.WaitCount(t, 10*time.Second, post, 1, viewers...)
	checkForgedUserRefused(t, lb.likes, post)

	// Scale up: a third replica appears in DNS and gets the next viewers (it has the fewest).
	startService(t, logs, fanoutBin, append(fanoutEnv, "LISTEN_ADDR=127.0.0.6:"+fanoutPort)...)
	dns.set("fanout-svc", "127.0.0.4", "127.0.0.5", "127.0.0.6")
	lb.awaitUp(t, "fanout-svc", 3)
	open(5)
	awaitViewers(t, map[string]int{node("127.0.0.4"): 5, node("127.0.0.5"): 5, node("127.0.0.6"): 5})

	// Scale down: node A stops (as `docker compose up --scale` or a rolling update stops it); it
	// drains, its viewers reconnect through haproxy and land on the remaining nodes.
	dns.set("fanout-svc", "127.0.0.5", "127.0.0.6")
	if err := nodeA.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	awaitViewersTotal(t, []string{node("127.0.0.5"), node("127.0.0.6")}, 15)
	like(t, lb.likes, post)
	clienttest.WaitCount(t, 10*time.Second, post, 2, viewers...)
}

// balancer is a running haproxy: the base URLs of its three frontends.
type balancer struct{ likes, streams, monitor string }

// startHAProxy runs haproxy with compose/haproxy.cfg adapted to this machine.
func startHAProxy(t *testing.T, bin, dnsAddr, writerPort, fanoutPort string) *balancer {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "compose", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	likes, streams, monitor := freeport.Port(t), freeport.Port(t), freeport.Port(t)
	cfg := string(raw)
	for _, r := range []struct{ from, to string }{
		{"bind :8080", fmt.Sprintf("bind 127.0.0.1:%d", likes)},
		{"bind :8090", fmt.Sprintf("bind 127.0.0.1:%d", streams)},
		{"bind :8404", fmt.Sprintf("bind 127.0.0.1:%d", monitor)},
		{"127.0.0.11:53", dnsAddr},
		{"writer-svc:8080", "writer-svc:" + writerPort},
		{"fanout-svc:8090", "fanout-svc:" + fanoutPort},
	} {
		if !strings.Contains(cfg, r.from) {
			t.Fatalf("compose/haproxy.cfg no longer contains %q; update this test", r.from)
		}
		cfg = strings.ReplaceAll(cfg, r.from, r.to)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The open-file limit here (20,000) is below what the default maxconn (100000) needs; the
	// file reads HAPROXY_MAXCONN from the environment, as it does under Compose.
	startService(t, filepath.Dir(path), bin, "-f", path, "-db", "HAPROXY_MAXCONN=4000")
	lb := &balancer{
		likes:   fmt.Sprintf("http://127.0.0.1:%d", likes),
		streams: fmt.Sprintf("http://127.0.0.1:%d", streams),
		monitor: fmt.Sprintf("http://127.0.0.1:%d", monitor),
	}
	poll.Until(t, 10*time.Second, "haproxy /healthz", func() bool { return httpStatus(lb.monitor+"/healthz") == http.StatusOK })
	return lb
}

// awaitUp waits until haproxy reports n servers UP in backend (by health check on /readyz).
func (b *balancer) awaitUp(t *testing.T, backend string, n int) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d servers UP in %s", n, backend), func() bool {
		return b.serversUp(backend) == n
	})
}

// serversUp reads haproxy's CSV statistics.
func (b *balancer) serversUp(backend string) int {
	resp, err := http.Get(b.monitor + "/stats;csv")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	r := csv.NewReader(resp.Body)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) == 0 {
		return -1
	}
	status := -1
	for i, col := range rows[0] {
		if col == "status" {
			status = i
		}
	}
	up := 0
	for _, row := range rows[1:] {
		if status >= 0 && len(row) > status && row[0] == backend && row[1] != "BACKEND" && row[status] == "UP" {
			up++
		}
	}
	return up
}

// startService runs bin with args (KEY=VALUE entries become its environment) and stops it with
// SIGTERM when the test ends, SIGKILL after 10 s.
func startService(t *testing.T, logDir, bin string, args ...string) *exec.Cmd {
	t.Helper()
	var env, argv []string
	for _, a := range args {
		if strings.Contains(a, "=") && !strings.HasPrefix(a, "-") {
			env = append(env, a)
		} else {
			argv = append(argv, a)
		}
	}
	log, err := os.CreateTemp(logDir, filepath.Base(bin)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = slices.Concat(env, []string{"PATH=" + os.Getenv("PATH")})
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited); log.Close() }() // reaps the process
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("%s %v log:\n%s", filepath.Base(bin), env, tail(out, 2000))
		}
	})
	return cmd
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// awaitConnected waits until v's stream is open and has shown post's count.
func awaitConnected(t *testing.T, v *clienttest.Viewer, post string) {
	t.Helper()
	poll.Until(t, 10*time.Second, "a viewer's stream to open", func() bool {
		_, ok := v.Count(post)
		return v.Connected() && ok
	})
}

// awaitViewers waits until each node's likes_fanout_viewers gauge shows the wanted number.
func awaitViewers(t *testing.T, want map[string]int) {
	t.Helper()
	poll.Check(t, 10*time.Second, func() error {
		got := map[string]int{}
		same := true
		for node, n := range want {
			got[node] = nodeViewers(node)
			same = same && got[node] == n
		}
		if !same {
			return fmt.Errorf("viewers per node %v; want %v", got, want)
		}
		return nil
	})
}

// awaitViewersTotal waits until the nodes together hold total viewers.
func awaitViewersTotal(t *testing.T, nodes []string, total int) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("%d viewers on %v", total, nodes), func() bool {
		sum := 0
		for _, n := range nodes {
			sum += nodeViewers(n)
		}
		return sum == total
	})
}

// nodeViewers reads a fanout node's viewer gauge from /metrics; -1 when unreachable.
func nodeViewers(base string) int {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "likes_fanout_viewers "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return int(f)
			}
		}
	}
	return -1
}

// like takes a session through the balancer, as the page does, and likes post with it,
// checking the like was stored.
func like(t *testing.T, base, post string) {
	t.Helper()
	s, err := clienttest.TakeSession(base)
	if err != nil {
		t.Fatalf("session through haproxy: %v", err)
	}
	status, reply, err := clienttest.TryLikeAs(base, post, s)
	if err != nil || status != http.StatusOK || !reply.Liked {
		t.Fatalf("like through haproxy: %d %+v %v; want 200 liked:true", status, reply, err)
	}
}

// checkForgedUserRefused: a like that names its user in X-User-ID through the balancer is 401
// (haproxy removes the header, and the writer believes none by default) and counts nothing.
func checkForgedUserRefused(t *testing.T, base, post string) {
	t.Helper()
	before := clienttest.CountOf(t, base, post)
	status, _, err := clienttest.TryLike(base, post, "mallory")
	if err != nil || status != http.StatusUnauthorized {
		t.Errorf("like as X-User-ID: mallory through haproxy: %d %v; want 401", status, err)
	}
	if after := clienttest.CountOf(t, base, post); after != before {
		t.Errorf("count of %s %d after a forged like; want %d", post, after, before)
	}
}

func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

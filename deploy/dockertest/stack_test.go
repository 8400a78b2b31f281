package dockertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
)

// project is the suite's Compose project name: its own containers, networks and volume, never a
// user's `likes` project.
const project = "likes-dockertest"

// Settings the suite runs with. The limits are what this kind of machine grants (a process may
// hold at most 20,000 open files); the timings are short so that each step takes seconds, and
// keep the relations the defaults have (STREAM_IDLE_TIMEOUT = 2 x HEARTBEAT_INTERVAL, REDIS_GRACE
// above a restart of every data node, which took the fanout nodes' Redis away for 6.5-8 s on
// this 2-core machine under load, and above a failover).
var suiteSettings = []string{
	"NOFILE=16384", "HAPROXY_NOFILE=16384", "HAPROXY_MAXCONN=8000",
	"HEARTBEAT_INTERVAL=" + heartbeat.String(), "STREAM_IDLE_TIMEOUT=" + (2 * heartbeat).String(),
	"DRAIN_WINDOW=" + drainWindow.String(), "REDIS_GRACE=" + redisGrace.String(),
	// Every like here is a new session from this one address (the like flows take 50 a second),
	// which the defaults per address (30 sessions a minute, 100 likes a second) refuse by design.
	// The ramps and the checks read counts from this address too: no budget for those either.
	"SESSION_RATE=100000/1m", "LIKE_ADDR_RATE=off", "READ_ADDR_RATE=off",
	// The ramps' likes are load-test users' sessions, signed with the benchmark key, which the
	// writers accept only when told to (the README's `up` for a ramp sets it too).
	"BENCH_SESSION_KEY_FILE=/likes-credentials/bench-session.key",
	// APPENDFSYNC stays everysec: with always, the three data nodes' fsyncs share this one disk,
	// and a primary's fsync took up to 67 ms (11 ms for a Redis alone), which delays every
	// publish behind it and broke the capacity search at a few dozen viewers. The kills lose
	// nothing either way: each write is in the kernel before Redis answers; fsync guards a
	// machine, which the suite does not crash.
	// The Redis network's addresses are pinned: another range than a user's stack of the file.
	"REDIS_NET=10.89.8",
	"FANOUT_CPU_LIMIT=" + fanoutCPULimit, "FANOUT_MEM_LIMIT=" + fanoutMemLimit,
}

// Each fanout node's budget: a quarter of a CPU and 256 MiB, so that one host shows what more
// boxes buy (stepScale).
const (
	fanoutCPULimit      = "0.25"
	fanoutMemLimit      = "256m"
	fanoutMemLimitBytes = 256 << 20
)

const (
	heartbeat   = 5 * time.Second
	drainWindow = 3 * time.Second
	redisGrace  = 15 * time.Second
)

// baseImageVars are the Compose variables that select base images.
var baseImageVars = []string{"REDIS_IMAGE", "HAPROXY_IMAGE", "GO_IMAGE", "STATIC_IMAGE", "PROMETHEUS_IMAGE"}

// defaultRedisImage is docker-compose.yml's default REDIS_IMAGE: whether the engine can pull it
// tells whether a registry answers.
const defaultRedisImage = "redis:7.4.6-alpine"

// stack is the suite's Compose project on the engine.
type stack struct {
	t      *testing.T
	env    []string // Compose variables for every command
	likes  string   // haproxy's likes port, http://127.0.0.1:N
	pages  string   // the same streams port by the name the page's CORS setting allows
	stream string   // haproxy's streams port, http://127.0.0.1:N
	stats  string   // haproxy's stats page
	prom   string   // Prometheus (the monitoring profile), http://127.0.0.1:N
}

// newStack prepares the project (removing what an earlier, interrupted run left) and takes it
// down with its volume when the test ends, also on failure.
func newStack(t *testing.T) *stack {
	t.Helper()
	likes, streams, monitor, prom := freeport.Port(t), freeport.Port(t), freeport.Port(t), freeport.Port(t)
	env := append(slices.Clone(suiteSettings), "COMPOSE_PROJECT_NAME="+project,
		"LIKES_PORT="+strconv.Itoa(likes), "STREAMS_PORT="+strconv.Itoa(streams), "MONITOR_PORT="+strconv.Itoa(monitor),
		// Every command without a --profile of its own (up, scale, down) includes Prometheus,
		// which the fault steps ask for the alerts they should raise.
		"COMPOSE_PROFILES=monitoring", "PROMETHEUS_PORT="+strconv.Itoa(prom))
	env = append(env, imageSettings(t)...)
	s := &stack{
		t: t, env: env,
		likes:  fmt.Sprintf("http://127.0.0.1:%d", likes),
		stream: fmt.Sprintf("http://127.0.0.1:%d", streams),
		pages:  fmt.Sprintf("http://localhost:%d", streams),
		stats:  fmt.Sprintf("http://127.0.0.1:%d/stats", monitor),
		prom:   fmt.Sprintf("http://127.0.0.1:%d", prom),
	}
	if _, err := s.compose(2*time.Minute, "--profile", "bench", "--profile", "monitoring", "down", "-v", "--remove-orphans", "--timeout", "5"); err != nil {
		t.Fatalf("clear an earlier run's project: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.compose(time.Minute, "--profile", "bench", "--profile", "monitoring", "logs", "--no-color", "--tail", "40")
			t.Logf("compose logs (last 40 lines per container):\n%s", out)
		}
		if _, err := s.compose(3*time.Minute, "--profile", "bench", "--profile", "monitoring", "down", "-v", "--remove-orphans", "--timeout", "5"); err != nil {
			t.Errorf("down -v at the end: %v", err)
		}
	})
	return s
}

// imageSettings returns the base-image variables: the environment's, else those `make
// images-offline` wrote, else none (the public images, which must be in the engine).
func imageSettings(t *testing.T) []string {
	var set []string
	for _, v := range baseImageVars {
		if val := os.Getenv(v); val != "" {
			set = append(set, v+"="+val)
		}
	}
	if len(set) > 0 {
		return set
	}
	path := filepath.Join(repoRoot, ".run", "offline", "images.env")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !registryAnswers() {
		// No registry and no stand-ins yet: build them, as `make images-offline` would, rather
		// than fail on the first pull (.ci/run builds them before `make test`).
		fmt.Fprintf(os.Stderr, "dockertest: no registry answers and no %s: running scripts/images-offline.sh\n", path)
		cmd := exec.Command(filepath.Join(repoRoot, "scripts", "images-offline.sh"))
		cmd.Dir, cmd.Stdout, cmd.Stderr = repoRoot, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("no registry answers and scripts/images-offline.sh failed: %v", err)
		}
		f, err = os.Open(path)
	}
	if err != nil {
		t.Logf("no %s and no %v set: using the public base images", path, baseImageVars)
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, _, ok := strings.Cut(sc.Text(), "="); ok && slices.Contains(baseImageVars, k) {
			set = append(set, sc.Text())
		}
	}
	t.Logf("base images from %s: %v", path, set)
	return set
}

// registryAnswers reports whether the engine can pull the compose file's default Redis image
// (already present counts as answering).
func registryAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := docker(ctx, nil, "image", "inspect", defaultRedisImage); err == nil {
		return true
	}
	_, err := docker(ctx, nil, "pull", defaultRedisImage)
	return err == nil
}

// compose runs `docker compose` on docker-compose.yml with the suite's settings.
func (s *stack) compose(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return docker(ctx, s.env, append([]string{"compose", "-f", filepath.Join(repoRoot, "docker-compose.yml")}, args...)...)
}

func (s *stack) mustCompose(timeout time.Duration, args ...string) string {
	s.t.Helper()
	out, err := s.compose(timeout, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// docker runs a plain docker command (inspect, kill, network ...).
func (s *stack) docker(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return docker(ctx, nil, args...)
}

func (s *stack) mustDocker(args ...string) string {
	s.t.Helper()
	out, err := s.docker(args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// containers returns the names of the project's containers of service ("": every service),
// running or, when all is set, not, sorted.
func (s *stack) containers(service string, all bool) []string {
	s.t.Helper()
	args := []string{"ps", "--format", "{{.Names}}", "--filter", "label=com.docker.compose.project=" + project}
	if service != "" {
		args = append(args, "--filter", "label=com.docker.compose.service="+service)
	}
	if all {
		args = append(args, "-a")
	}
	out := s.mustDocker(args...)
	names := strings.Fields(out)
	slices.Sort(names)
	return names
}

// state is what docker inspect says of a container.
type state struct {
	Running  bool
	Health   string // healthy, starting, unhealthy; "" without a health check
	Restarts int
}

func (s *stack) inspect(name string) state {
	s.t.Helper()
	out, err := s.docker("inspect", "-f", "{{.State.Running}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}} {{.RestartCount}}", name)
	if err != nil {
		return state{}
	}
	f := strings.Fields(out)
	if len(f) != 3 {
		return state{}
	}
	n, _ := strconv.Atoi(f[2])
	return state{Running: f[0] == "true", Health: strings.TrimPrefix(f[1], "none"), Restarts: n}
}

// network is the full name of one of the project's networks ("default", "redis").
func network(name string) string { return project + "_" + name }

// ip returns a container's address on one of the project's networks, "" when not attached.
func (s *stack) ip(name, net string) string {
	out, err := s.docker("inspect", "-f", fmt.Sprintf(`{{with index .NetworkSettings.Networks %q}}{{.IPAddress}}{{end}}`, network(net)), name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// node is one fanout-svc container and its URL on the project's default network (the host
// reaches the project's own bridge directly; nothing else is addressed).
type node struct {
	name, url string
}

// nodes returns the running fanout-svc containers.
func (s *stack) nodes() []node {
	s.t.Helper()
	var out []node
	for _, name := range s.containers("fanout-svc", false) {
		if ip := s.ip(name, "default"); ip != "" {
			out = append(out, node{name: name, url: "http://" + net.JoinHostPort(ip, "8090")})
		}
	}
	return out
}

// metric reads one sample of a node's /metrics; -1 when unreachable.
func (n node) metric(name string) float64 {
	v, err := clienttest.ScrapeMetric(n.url, name)
	if err != nil {
		return -1
	}
	return v
}

// viewersPerNode reads each running node's viewer gauge.
func (s *stack) viewersPerNode() map[string]int {
	out := map[string]int{}
	for _, n := range s.nodes() {
		out[n.name] = int(n.metric("likes_fanout_viewers"))
	}
	return out
}

// describeNodes reports each running node's viewers, updates heard and pub/sub state, for
// failure messages.
func (s *stack) describeNodes() string {
	var b strings.Builder
	for _, n := range s.nodes() {
		fmt.Fprintf(&b, "\n  %s: viewers %v, updates %v, pubsub messages %v, resubscribes %v, redis reachable %v, sheds %v",
			n.name, n.metric("likes_fanout_viewers"), n.metric("likes_fanout_updates_total"), n.metric("likes_fanout_pubsub_messages_total"),
			n.metric("likes_fanout_resubscribes_total"), n.metric("likes_fanout_redis_reachable"), n.metric("likes_fanout_redis_sheds_total"))
	}
	return b.String()
}

// awaitHealthy waits until service has want running containers, all healthy.
func (s *stack) awaitHealthy(service string, want int, timeout time.Duration) {
	s.t.Helper()
	poll.Check(s.t, timeout, func() error {
		var seen []string
		names := s.containers(service, false)
		healthy := 0
		for _, n := range names {
			st := s.inspect(n)
			seen = append(seen, fmt.Sprintf("%s running=%v health=%s", n, st.Running, st.Health))
			if st.Running && (st.Health == "healthy" || st.Health == "") {
				healthy++
			}
		}
		if len(names) == want && healthy == want {
			return nil
		}
		return fmt.Errorf("%d healthy %s containers (last seen: %v)", want, service, seen)
	})
}

// awaitBackends waits until haproxy reports want fanout servers UP.
func (s *stack) awaitBackends(want int, timeout time.Duration) {
	s.t.Helper()
	poll.Check(s.t, timeout, func() error {
		servers, _ := clienttest.HAProxyServers(s.stats, "fanout-svc")
		up := 0
		for _, sv := range servers {
			if sv.Status == "UP" {
				up++
			}
		}
		if up == want {
			return nil
		}
		return fmt.Errorf("haproxy to report %d fanout servers UP (last seen %v)", want, servers)
	})
}

// storedCount asks the writers, through haproxy, for a post's count, again while they answer 503:
// a read waits for the replicas a like waits for (REDIS_ACK_REPLICAS=all), which a replica that
// has just come back may not confirm yet.
func (s *stack) storedCount(post string) int64 {
	s.t.Helper()
	var r clienttest.LikeReply
	poll.Check(s.t, 15*time.Second, func() error {
		resp, err := http.Get(s.likes + "/count/" + post)
		if err != nil {
			return fmt.Errorf("GET /count/%s through haproxy: %w", post, err)
		}
		defer resp.Body.Close()
		if err := decodeJSON(resp, &r); err != nil {
			return fmt.Errorf("GET /count/%s through haproxy: %w", post, err)
		}
		return nil
	})
	return r.Count
}

// like takes a session for a new user through haproxy, as the page does, and likes post with it,
// failing unless the like was stored; who names the user in failure messages.
func (s *stack) like(post, who string) int64 {
	s.t.Helper()
	sess, err := clienttest.TakeSession(s.likes)
	if err != nil {
		s.t.Fatalf("session for %s through haproxy: %v", who, err)
	}
	status, r, err := clienttest.TryLikeAs(s.likes, post, sess)
	if err != nil || status != http.StatusOK || !r.Liked {
		s.t.Fatalf("like %s as %s through haproxy: status %d %+v %v; want 200 liked", post, who, status, r, err)
	}
	return r.Count
}

// TestDefaultRedisImageIsTheComposeDefault keeps defaultRedisImage, by which the suite tells
// whether a registry answers, equal to the image docker-compose.yml runs by default.
func TestDefaultRedisImageIsTheComposeDefault(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "${REDIS_IMAGE:-" + defaultRedisImage + "}"; !strings.Contains(string(b), want) {
		t.Errorf("docker-compose.yml has no %q; keep defaultRedisImage equal to its REDIS_IMAGE default", want)
	}
}

package deploytest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// redisScript is deploy/redis/likes-redis.sh, which starts every data node and Sentinel of
// both deployments.
var (
	redisScriptDir = filepath.Join(repoRoot, "deploy", "redis")
	redisScript    = filepath.Join(redisScriptDir, "likes-redis.sh")
)

// composeScriptDir is where docker-compose.yml mounts deploy/redis.
const composeScriptDir = "/likes-redis"

// composeRedis is docker-compose.yml's Redis: the services that run likes-redis.sh, by role,
// each sorted by name.
type composeRedis struct {
	nodes     []types.ServiceConfig // `likes-redis.sh node`
	sentinels []types.ServiceConfig // `likes-redis.sh sentinel`
}

func (r composeRedis) all() []types.ServiceConfig {
	return append(slices.Clone(r.nodes), r.sentinels...)
}

// serviceNames returns the services' names.
func serviceNames(services []types.ServiceConfig) []string {
	out := make([]string, len(services))
	for i, s := range services {
		out[i] = s.Name
	}
	return out
}

// sentinelAddrs returns what REDIS_SENTINEL_ADDRS must say: every Sentinel by its service
// name, which it announces, on Sentinel's port.
func (r composeRedis) sentinelAddrs() string {
	var addrs []string
	for _, s := range r.sentinels {
		addrs = append(addrs, s.Name+":26379")
	}
	return strings.Join(addrs, ",")
}

// composeRedisOf sorts p's services that run likes-redis.sh by role.
func composeRedisOf(t *testing.T, p *types.Project) composeRedis {
	t.Helper()
	var r composeRedis
	for _, s := range p.Services {
		c := s.Command
		if len(c) < 3 || c[0] != "sh" || c[1] != composeScriptDir+"/likes-redis.sh" {
			continue
		}
		switch c[2] {
		case "node":
			r.nodes = append(r.nodes, s)
		case "sentinel":
			r.sentinels = append(r.sentinels, s)
		default:
			t.Errorf("%s runs likes-redis.sh %s; want node or sentinel", s.Name, c[2])
		}
	}
	byName := func(a, b types.ServiceConfig) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(r.nodes, byName)
	slices.SortFunc(r.sentinels, byName)
	return r
}

// redisOptions returns a data node's redis-server options (the words after `node`), as
// name -> value; every option takes one value here.
func redisOptions(t *testing.T, s types.ServiceConfig) map[string]string {
	t.Helper()
	args := s.Command[3:]
	if len(args)%2 != 0 {
		t.Fatalf("%s: redis-server options %q are not --name value pairs", s.Name, args)
	}
	opts := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			t.Fatalf("%s: redis-server option %q does not start with --", s.Name, args[i])
		}
		opts[name] = args[i+1]
	}
	return opts
}

// serviceEnv returns a service's environment variable, "" when unset.
func serviceEnv(s types.ServiceConfig, name string) string {
	if v := s.Environment[name]; v != nil {
		return *v
	}
	return ""
}

// TestComposeRedisTopology: a primary and two replicas, and three Sentinels watching them, each
// started by likes-redis.sh under the name the others resolve it by, with the settings a
// failover and an acknowledgement rely on on every data node (any may become the primary).
func TestComposeRedisTopology(t *testing.T) {
	p := loadCompose(t)
	r := composeRedisOf(t, p)
	if got := serviceNames(r.nodes); !slices.Equal(got, []string{"redis-0", "redis-1", "redis-2"}) {
		t.Fatalf("data nodes %v; want redis-0, redis-1 and redis-2", got)
	}
	if got := serviceNames(r.sentinels); !slices.Equal(got, []string{"sentinel-0", "sentinel-1", "sentinel-2"}) {
		t.Fatalf("sentinels %v; want sentinel-0, sentinel-1 and sentinel-2", got)
	}
	if _, err := os.Stat(redisScript); err != nil {
		t.Fatalf("the script the Redis services run: %v", err)
	}
	primary, master := r.nodes[0].Name, serviceEnv(r.nodes[0], "REDIS_SENTINEL_MASTER")
	for _, s := range r.all() {
		t.Run(s.Name, func(t *testing.T) {
			checkScriptMount(t, s)
			for name, want := range map[string]string{
				"REDIS_INITIAL_PRIMARY": primary, "REDIS_SENTINEL_ADDRS": r.sentinelAddrs(), "REDIS_SENTINEL_MASTER": master,
			} {
				if got := serviceEnv(s, name); got != want || got == "" {
					t.Errorf("%s = %q; want %q", name, got, want)
				}
			}
			if len(s.Ports) != 0 {
				t.Errorf("publishes %v; Redis is reached on the redis network only", s.Ports)
			}
			if s.Init == nil || !*s.Init {
				t.Errorf("init %v; want true, so that a timed-out health check's redis-cli is reaped", s.Init)
			}
			if s.Command[2] == "node" {
				checkComposeDataNode(t, s)
			} else {
				checkComposeSentinel(t, s, r)
			}
		})
	}
}

// checkScriptMount: the service mounts deploy/redis read-only where its command finds the script.
func checkScriptMount(t *testing.T, s types.ServiceConfig) {
	t.Helper()
	ok := slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
		return v.Type == types.VolumeTypeBind && v.Source == redisScriptDir && v.Target == composeScriptDir && v.ReadOnly
	})
	if !ok {
		t.Errorf("volumes %v; want deploy/redis bound read-only at %s", s.Volumes, composeScriptDir)
	}
}

// checkComposeDataNode: the node announces its service name; a primary without a replica
// refuses writes (min-replicas-to-write) after a short lag; a replica's sync starts at once; the
// script, not the file, decides the role (no --replicaof); healthy means in sync.
func checkComposeDataNode(t *testing.T, s types.ServiceConfig) {
	t.Helper()
	if got := serviceEnv(s, "REDIS_NODE"); got != s.Name {
		t.Errorf("REDIS_NODE = %q; want %q, its name on the redis network", got, s.Name)
	}
	opts := redisOptions(t, s)
	if opts["min-replicas-to-write"] != "1" {
		t.Errorf("--min-replicas-to-write %q; want 1, so that a primary cut off from both replicas stops taking likes", opts["min-replicas-to-write"])
	}
	if lag, err := strconv.Atoi(opts["min-replicas-max-lag"]); err != nil || lag < 1 || lag > 5 {
		t.Errorf("--min-replicas-max-lag %q; want 1 to 5 s, shorter than a failover takes", opts["min-replicas-max-lag"])
	}
	if opts["maxmemory"] == "" || opts["maxmemory"] == "0" || opts["maxmemory-policy"] != "noeviction" {
		t.Errorf("--maxmemory %q --maxmemory-policy %q; want a bound, and noeviction: an evicted key is a like lost or counted twice",
			opts["maxmemory"], opts["maxmemory-policy"])
	}
	if opts["repl-diskless-sync-delay"] != "0" {
		t.Errorf("--repl-diskless-sync-delay %q; want 0, so a replica's full sync starts at once", opts["repl-diskless-sync-delay"])
	}
	for _, fixed := range []string{"replicaof", "slaveof", "port", "replica-announce-ip"} {
		if v, ok := opts[fixed]; ok {
			t.Errorf("--%s %q in the command; likes-redis.sh sets it", fixed, v)
		}
	}
	want := []string{"CMD", "sh", composeScriptDir + "/likes-redis.sh", "check-node"}
	if s.HealthCheck == nil || !slices.Equal(s.HealthCheck.Test, want) {
		t.Errorf("healthcheck %v; want %v", s.HealthCheck, want)
	}
	if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= 10*time.Second {
		t.Errorf("stop_grace_period %v; want more than Redis's 10 s shutdown-timeout (a primary waits for its replicas)", s.StopGracePeriod)
	}
}

// checkComposeSentinel: announced under its service name; a quorum that is a majority; timing
// that fails over well within the 10 s in which likes must be acknowledged again; started once
// every data node is healthy (it learns the replicas from the primary at its start).
func checkComposeSentinel(t *testing.T, s types.ServiceConfig, r composeRedis) {
	t.Helper()
	if got := serviceEnv(s, "SENTINEL_NAME"); got != s.Name {
		t.Errorf("SENTINEL_NAME = %q; want %q, its name on the redis network", got, s.Name)
	}
	checkSentinelSettings(t, len(r.sentinels), serviceEnv(s, "SENTINEL_QUORUM"), serviceEnv(s, "SENTINEL_DOWN_AFTER_MS"), serviceEnv(s, "SENTINEL_FAILOVER_TIMEOUT_MS"))
	for _, n := range r.nodes {
		if d, ok := s.DependsOn[n.Name]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("depends_on %v; want every data node healthy (%s is not)", s.DependsOn, n.Name)
		}
	}
	want := []string{"CMD", "sh", composeScriptDir + "/likes-redis.sh", "check-sentinel"}
	if s.HealthCheck == nil || !slices.Equal(s.HealthCheck.Test, want) {
		t.Errorf("healthcheck %v; want %v", s.HealthCheck, want)
	}
}

// checkSentinelSettings holds the Sentinels' quorum and timing (as the environment gives them to
// likes-redis.sh) to what a failover within 10 s of a kill needs.
func checkSentinelSettings(t *testing.T, sentinels int, quorum, downAfter, failoverTimeout string) {
	t.Helper()
	q, err := strconv.Atoi(quorum)
	if err != nil || q <= sentinels/2 || q > sentinels {
		t.Errorf("SENTINEL_QUORUM %q of %d Sentinels; want a majority", quorum, sentinels)
	}
	down, err1 := strconv.Atoi(downAfter)
	failover, err2 := strconv.Atoi(failoverTimeout)
	// A failed failover is retried twice the failover timeout after it began, then takes about
	// 2 s to promote and reconfigure: noticing plus a retry must fit well within the 10 s. A
	// Sentinel may reach a primary it has just switched to only a second later: called down in
	// less than 1.5 s, a new primary could be failed over again at once (deploy/partitiontest's
	// TestSentinelTiming).
	if err1 != nil || err2 != nil || down < 1500 || down > 2000 || failover < down || down+2*failover > 6000 {
		t.Errorf("SENTINEL_DOWN_AFTER_MS %q, SENTINEL_FAILOVER_TIMEOUT_MS %q; want a primary called down within 1.5-2 s and a failover retried well within the 10 s limit", downAfter, failoverTimeout)
	}
}

// TestComposeRedisNamesFromHosts: each Redis container has a pinned address in the redis
// network's subnet, below the range the engine hands out, and every container on that network
// resolves all six names to those addresses from /etc/hosts: Sentinel resolves names
// synchronously, and the engine's DNS stalls while it stops and starts containers, the moment a
// failover needs them. REDIS_NET moves all of it.
func TestComposeRedisNamesFromHosts(t *testing.T) {
	for _, tt := range []struct{ give, want string }{{"", "10.89.7"}, {"REDIS_NET=10.1.2", "10.1.2"}} {
		var env []string
		if tt.give != "" {
			env = []string{tt.give}
		}
		p := loadCompose(t, env...)
		ipam := p.Networks["redis"].Ipam.Config
		if len(ipam) != 1 || ipam[0].Subnet != tt.want+".0/24" || ipam[0].IPRange != tt.want+".128/25" {
			t.Fatalf("env %v: redis network ipam %+v; want subnet %s.0/24, dynamic range %s.128/25", env, ipam, tt.want, tt.want)
		}
		hosts := map[string]string{}
		for _, s := range composeRedisOf(t, p).all() {
			addr := ""
			if n := s.Networks["redis"]; n != nil {
				addr = n.Ipv4Address
			}
			last, ok := strings.CutPrefix(addr, tt.want+".")
			if n, err := strconv.Atoi(last); !ok || err != nil || n < 1 || n >= 128 {
				t.Errorf("env %v: %s ipv4_address %q; want a pinned %s.N below .128", env, s.Name, addr, tt.want)
			}
			hosts[s.Name] = addr
		}
		for _, s := range p.Services {
			if _, on := s.Networks["redis"]; !on {
				continue
			}
			for name, addr := range hosts {
				if got := s.ExtraHosts[name]; !slices.Equal(got, []string{addr}) {
					t.Errorf("env %v: %s resolves %s to %v from /etc/hosts; want %s", env, s.Name, name, got, addr)
				}
			}
		}
	}
}

// TestComposeServicesFindRedisThroughSentinels: both services ask every Sentinel for the
// primary under the name the Sentinels monitor it by, start once the Sentinels are healthy, and
// the writers wait for a replica before answering; REDIS_URL still names a Redis (used when the
// Sentinel addresses are emptied, compose/one-redis.yml).
func TestComposeServicesFindRedisThroughSentinels(t *testing.T) {
	p := loadCompose(t)
	r := composeRedisOf(t, p)
	for _, name := range []string{"writer-svc", "fanout-svc"} {
		s := p.Services[name]
		if got, want := serviceEnv(s, "REDIS_SENTINEL_ADDRS"), r.sentinelAddrs(); got != want {
			t.Errorf("%s REDIS_SENTINEL_ADDRS = %q; want every Sentinel, %q", name, got, want)
		}
		if got, want := serviceEnv(s, "REDIS_SENTINEL_MASTER"), serviceEnv(r.sentinels[0], "REDIS_SENTINEL_MASTER"); got != want {
			t.Errorf("%s REDIS_SENTINEL_MASTER = %q; want the Sentinels' %q", name, got, want)
		}
		if got, want := serviceEnv(s, "REDIS_URL"), "redis://"+r.nodes[0].Name+":6379/0"; got != want {
			t.Errorf("%s REDIS_URL = %q; want %q, the initial primary", name, got, want)
		}
		for _, sn := range r.sentinels {
			if d, ok := s.DependsOn[sn.Name]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s depends_on %v; want every Sentinel healthy (%s is not)", name, s.DependsOn, sn.Name)
			}
		}
	}
	if got := serviceEnv(p.Services["writer-svc"], "REDIS_ACK_REPLICAS"); got != "all" {
		t.Errorf("writer-svc REDIS_ACK_REPLICAS = %q; want all of the %d replicas that the Sentinels do not call down, so that neither a lost node nor a partition loses an acknowledged like", got, len(r.nodes)-1)
	}
	lg := p.Services["loadgen"]
	if got, want := serviceEnv(lg, "LOADGEN_REDIS_SENTINEL_ADDRS"), serviceEnv(p.Services["writer-svc"], "REDIS_SENTINEL_ADDRS"); got != want || got == "" {
		t.Errorf("loadgen LOADGEN_REDIS_SENTINEL_ADDRS = %q; want the services' Sentinels %q, so that it reads the primary after a failover", got, want)
	}
	if got, want := serviceEnv(lg, "LOADGEN_REDIS_SENTINEL_MASTER"), serviceEnv(r.sentinels[0], "REDIS_SENTINEL_MASTER"); got != want {
		t.Errorf("loadgen LOADGEN_REDIS_SENTINEL_MASTER = %q; want the Sentinels' %q", got, want)
	}
	if got := serviceEnv(lg, "LOADGEN_REDIS"); got != "" {
		t.Errorf("loadgen LOADGEN_REDIS = %q beside its Sentinels; want it unset (loadgen refuses both)", got)
	}
}

// loadComposeFiles loads docker-compose.yml and the override files, with profiles.
func loadComposeFiles(t *testing.T, profiles []string, overrides ...string) *types.Project {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "docker-compose.yml")}
	for _, o := range overrides {
		files = append(files, filepath.Join(repoRoot, o))
	}
	opts, err := cli.NewProjectOptions(files, cli.WithWorkingDirectory(repoRoot), cli.WithEnv(nil), cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load %v: %v", files, err)
	}
	return p
}

// TestComposeOneRedis: compose/one-redis.yml runs redis-0 alone, as the single Redis of earlier
// versions (same volume, no replica settings: min-replicas-to-write would refuse every write),
// and points both services (and loadgen) at it, with no Sentinels and no WAIT.
func TestComposeOneRedis(t *testing.T) {
	full := composeRedisOf(t, loadCompose(t))
	p := loadComposeFiles(t, nil, "compose/one-redis.yml")
	for _, s := range full.all() {
		_, on := p.Services[s.Name]
		if want := s.Name == "redis-0"; on != want {
			t.Errorf("%s enabled %v; want %v (only redis-0 runs)", s.Name, on, want)
		}
	}
	redis := p.Services["redis-0"]
	cmd := strings.Join(redis.Command, " ")
	for _, want := range []string{"likes-redis.sh node ", "--appendonly yes", "--appendfsync everysec", "--dir /data",
		"--maxmemory 768mb", "--maxmemory-policy noeviction"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis-0 command %q lacks %q", cmd, want)
		}
	}
	if strings.Contains(cmd, "min-replicas") {
		t.Errorf("redis-0 command %q: a Redis without replicas must not require them", cmd)
	}
	if !slices.ContainsFunc(redis.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Source == "redis-data" && v.Target == "/data" }) {
		t.Errorf("redis-0 volumes %v; want redis-data at /data, the counts of either file", redis.Volumes)
	}
	for _, name := range []string{"writer-svc", "fanout-svc"} {
		s := p.Services[name]
		if got := serviceEnv(s, "REDIS_SENTINEL_ADDRS") + serviceEnv(s, "REDIS_SENTINEL_MASTER"); got != "" {
			t.Errorf("%s Sentinel settings %q; want none, so that REDIS_URL is used", name, got)
		}
		if got := serviceEnv(s, "REDIS_URL"); got != "redis://redis-0:6379/0" {
			t.Errorf("%s REDIS_URL = %q; want redis://redis-0:6379/0", name, got)
		}
		var deps []string
		for d := range s.DependsOn {
			deps = append(deps, d)
		}
		if !slices.Equal(deps, []string{"redis-0"}) {
			t.Errorf("%s depends_on %v; want redis-0 only", name, deps)
		}
	}
	if got := serviceEnv(p.Services["writer-svc"], "REDIS_ACK_REPLICAS"); got != "0" {
		t.Errorf("writer-svc REDIS_ACK_REPLICAS = %q; want 0 (with no replica, WAIT 1 would refuse every like)", got)
	}
	lg := loadComposeFiles(t, []string{"bench"}, "compose/one-redis.yml").Services["loadgen"]
	if got, sentinels := serviceEnv(lg, "LOADGEN_REDIS"), serviceEnv(lg, "LOADGEN_REDIS_SENTINEL_ADDRS"); got != "redis-0:6379" || sentinels != "" {
		t.Errorf("loadgen LOADGEN_REDIS = %q, LOADGEN_REDIS_SENTINEL_ADDRS = %q; want redis-0:6379 and none", got, sentinels)
	}
}

package deploytest

import (
	"context"
	"net"
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

// loadCompose loads docker-compose.yml with every profile enabled and env as the only
// environment, as `docker compose` would see it.
func loadCompose(t *testing.T, env ...string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(repoRoot, "docker-compose.yml")},
		cli.WithWorkingDirectory(repoRoot),
		cli.WithEnv(env),
		cli.WithProfiles([]string{"*"}),
	)
	if err != nil {
		t.Fatalf("compose options: %v", err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return p
}

// oneShot reports whether s is one of this repository's tools (build target `tool`: loadgen,
// credentials), which run to completion: no listener, no health check.
func oneShot(s types.ServiceConfig) bool { return s.Build != nil && s.Build.Target == "tool" }

// likesServices returns the services built from this repository, by the program they run.
func likesServices(t *testing.T, p *types.Project) map[string]types.ServiceConfig {
	t.Helper()
	out := map[string]types.ServiceConfig{}
	for _, s := range p.Services {
		if s.Build == nil {
			continue
		}
		prog := s.Build.Args["SERVICE"]
		if prog == nil || *prog == "" {
			t.Errorf("service %s builds without a SERVICE build arg", s.Name)
			continue
		}
		out[*prog] = s
	}
	return out
}

func TestComposeServices(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"redis-0", "redis-1", "redis-2", "sentinel-0", "sentinel-1", "sentinel-2",
		"writer-svc", "fanout-svc", "haproxy", "loadgen"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("docker-compose.yml has no service %s", name)
		}
	}
	writer := p.Services["writer-svc"]
	if got := writer.GetScale(); got != 2 {
		t.Errorf("writer-svc replicas = %d; want 2", got)
	}
	if got := p.Services["loadgen"].Profiles; !slices.Equal(got, []string{"bench"}) {
		t.Errorf("loadgen profiles = %v; want [bench] so that `up` does not start it", got)
	}
	plain := loadComposeProfiles(t, nil)
	if _, ok := plain.Services["loadgen"]; ok {
		t.Errorf("loadgen is enabled without the bench profile")
	}
}

func loadComposeProfiles(t *testing.T, profiles []string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(repoRoot, "docker-compose.yml")},
		cli.WithWorkingDirectory(repoRoot), cli.WithEnv(nil), cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return p
}

// TestComposeBuilds checks that every built service points at a Dockerfile that exists, a stage
// that exists in it and a program directory with a main package.
func TestComposeBuilds(t *testing.T) {
	p := loadCompose(t)
	for _, s := range p.Services {
		if s.Build == nil {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			path := s.Build.Dockerfile
			if !filepath.IsAbs(path) {
				path = filepath.Join(s.Build.Context, path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("build.dockerfile: %v", err)
			}
			d := readDockerfile(t, path)
			if s.Build.Target != "" && d.stage(s.Build.Target) == nil {
				t.Errorf("build.target %q is not a stage of %s", s.Build.Target, path)
			}
			if prog := s.Build.Args["SERVICE"]; prog != nil {
				if _, err := os.Stat(filepath.Join(s.Build.Context, *prog)); err != nil {
					t.Errorf("build arg SERVICE=%s: no such directory in the build context", *prog)
				}
			}
			if s.Image == "" || strings.HasSuffix(s.Image, ":latest") || !strings.Contains(s.Image, ":") {
				t.Errorf("image %q: want an explicit non-latest tag, so scaled replicas share one build", s.Image)
			}
		})
	}
}

// TestComposeEnvironmentIsRead checks every variable set on a likes service against the
// variables its binary names in --help: a misspelt variable is silently ignored at run time.
func TestComposeEnvironmentIsRead(t *testing.T) {
	p := loadCompose(t)
	for prog, s := range likesServices(t, p) {
		t.Run(s.Name, func(t *testing.T) {
			if len(s.Environment) == 0 {
				return // nothing set, nothing to misspell
			}
			var read map[string]bool
			if oneShot(s) {
				read = helpEnv(helpText(t, prog, subcommand(s)...))
			} else {
				read = programEnv(t, prog)
			}
			if len(read) == 0 {
				t.Fatalf("%s --help names no environment variables", prog)
			}
			for name := range s.Environment {
				if !read[name] {
					t.Errorf("%s sets %s, which %s does not read (its --help names %d variables)", s.Name, name, prog, len(read))
				}
			}
		})
	}
}

// subcommand returns the leading non-flag word of a service's command ("ramp"), if any.
func subcommand(s types.ServiceConfig) []string {
	if len(s.Command) > 0 && !strings.HasPrefix(s.Command[0], "-") {
		return []string{s.Command[0]}
	}
	return nil
}

// TestComposeLoadgenCommand checks that loadgen's command and flags exist and that it targets
// the fanout replicas by their Compose DNS name.
func TestComposeLoadgenCommand(t *testing.T) {
	s := loadCompose(t).Services["loadgen"]
	if len(s.Entrypoint) != 0 {
		t.Errorf("loadgen entrypoint %v; want the image's, so that `run loadgen ramp ...` works", s.Entrypoint)
	}
	sub := subcommand(s)
	if len(sub) == 0 {
		t.Fatalf("loadgen command %v names no subcommand", s.Command)
	}
	help := helpText(t, "loadgen", sub...)
	if !strings.Contains(help, "Usage of loadgen "+sub[0]) {
		t.Fatalf("loadgen %s --help is not that subcommand's usage:\n%s", sub[0], help)
	}
	flags := helpFlags(help)
	for _, a := range s.Command[1:] {
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name, _, _ = strings.Cut(strings.TrimLeft(name, "-"), "=")
			if !flags[name] {
				t.Errorf("loadgen %s: flag --%s is not in its --help", sub[0], name)
			}
		}
	}
	if got := s.Environment["LOADGEN_FANOUT"]; got == nil || *got != "http://fanout-svc:8090" {
		t.Errorf("loadgen LOADGEN_FANOUT = %v; want http://fanout-svc:8090, the Compose DNS name of every replica", got)
	}
}

// TestComposeFanoutDrainsBeforeKill: Docker sends SIGKILL after stop_grace_period, which must
// cover the drain window and the shutdown timeout.
func TestComposeFanoutDrainsBeforeKill(t *testing.T) {
	s := loadCompose(t).Services["fanout-svc"]
	var need time.Duration
	for _, name := range []string{"DRAIN_WINDOW", "SHUTDOWN_TIMEOUT"} {
		v := s.Environment[name]
		if v == nil {
			t.Fatalf("fanout-svc does not set %s", name)
		}
		d, err := time.ParseDuration(*v)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, *v, err)
		}
		need += d
	}
	if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= need {
		t.Errorf("fanout-svc stop_grace_period %v; want more than DRAIN_WINDOW + SHUTDOWN_TIMEOUT = %v", s.StopGracePeriod, need)
	}
}

// TestComposeScaledServicesPublishNoHostPort: two replicas cannot bind one host port, so only the
// unscaled balancer publishes ports.
func TestComposeScaledServicesPublishNoHostPort(t *testing.T) {
	p := loadCompose(t)
	for _, s := range p.Services {
		scalable := s.Build != nil || s.GetScale() > 1 // s is a copy; GetScale needs its address
		if scalable && len(s.Ports) > 0 {
			t.Errorf("%s publishes %v; scaled services must publish no host port", s.Name, s.Ports)
		}
	}
	if len(p.Services["haproxy"].Ports) == 0 {
		t.Errorf("haproxy publishes no port; it is the only way in")
	}
}

// TestComposeHealthAndOrder checks that each server has a health check on its own port and that
// every depends_on waits for a check that exists, so `docker compose up --wait` converges.
func TestComposeHealthAndOrder(t *testing.T) {
	p := loadCompose(t)
	for _, s := range p.Services {
		if !oneShot(s) && (s.HealthCheck == nil || len(s.HealthCheck.Test) == 0) {
			t.Errorf("%s has no healthcheck", s.Name)
		}
		for dep, cond := range s.DependsOn {
			target, ok := p.Services[dep]
			if !ok {
				t.Errorf("%s depends on unknown service %s", s.Name, dep)
				continue
			}
			if oneShot(target) {
				// A tool that runs once before the others (credentials): it must have finished.
				if cond.Condition != types.ServiceConditionCompletedSuccessfully {
					t.Errorf("%s depends_on %s with condition %q; want %s", s.Name, dep, cond.Condition, types.ServiceConditionCompletedSuccessfully)
				}
				continue
			}
			if cond.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s depends_on %s with condition %q; want %s", s.Name, dep, cond.Condition, types.ServiceConditionHealthy)
			}
			if target.HealthCheck == nil {
				t.Errorf("%s waits for %s to be healthy, which has no healthcheck", s.Name, dep)
			}
		}
	}
	for _, s := range likesServices(t, p) {
		if oneShot(s) {
			continue
		}
		port := listenPort(t, s)
		want := "http://127.0.0.1:" + port + "/readyz"
		if got := s.HealthCheck.Test; !slices.Equal(got, []string{"CMD", "/healthcheck", want}) {
			t.Errorf("%s healthcheck %v; want [CMD /healthcheck %s]", s.Name, got, want)
		}
		if !slices.Contains(s.Expose, port) {
			t.Errorf("%s exposes %v; want its listen port %s", s.Name, s.Expose, port)
		}
	}
}

// listenPort returns the port of a service's LISTEN_ADDR.
func listenPort(t *testing.T, s types.ServiceConfig) string {
	t.Helper()
	v := s.Environment["LISTEN_ADDR"]
	if v == nil {
		t.Fatalf("%s sets no LISTEN_ADDR", s.Name)
	}
	_, port, err := net.SplitHostPort(*v)
	if err != nil {
		t.Fatalf("%s LISTEN_ADDR %q: %v", s.Name, *v, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("%s LISTEN_ADDR %q: port is not a number", s.Name, *v)
	}
	return port
}

// TestComposeRedisDurability checks, on every data node (any may become the primary), the
// append-only file on a named volume of its own and that APPENDFSYNC selects its fsync policy,
// everysec by default.
func TestComposeRedisDurability(t *testing.T) {
	tests := []struct {
		give []string
		want string
	}{
		{give: nil, want: "everysec"},
		{give: []string{"APPENDFSYNC=always"}, want: "always"},
	}
	for _, tt := range tests {
		p := loadCompose(t, tt.give...)
		volumes := map[string]string{}
		for _, redis := range composeRedisOf(t, p).nodes {
			opts := redisOptions(t, redis)
			if opts["appendonly"] != "yes" {
				t.Errorf("%s: --appendonly %q; want yes", redis.Name, opts["appendonly"])
			}
			if opts["appendfsync"] != tt.want {
				t.Errorf("env %v: %s --appendfsync %q; want %s", tt.give, redis.Name, opts["appendfsync"], tt.want)
			}
			if !strings.HasPrefix(redis.Image, "redis:7.") {
				t.Errorf("%s image %s; want a pinned redis:7.x", redis.Name, redis.Image)
			}
			var volume string
			for _, v := range redis.Volumes {
				if v.Type == types.VolumeTypeVolume && v.Target == "/data" {
					volume = v.Source
				}
			}
			if volume == "" || opts["dir"] != "/data" {
				t.Errorf("%s keeps its AOF outside a named volume at /data: volumes %v, --dir %q", redis.Name, redis.Volumes, opts["dir"])
			}
			if other, ok := volumes[volume]; ok {
				t.Errorf("%s and %s share the volume %s; each data node needs its own", other, redis.Name, volume)
			}
			volumes[volume] = redis.Name
		}
		// The single Redis of earlier versions kept its counts in redis-data: the initial primary
		// keeps that volume, so an existing stack's counts carry over.
		if volumes["redis-data"] != "redis-0" {
			t.Errorf("volume redis-data is %q's; want redis-0's, the initial primary", volumes["redis-data"])
		}
	}
}

// TestComposeImagesPinned: every image pulled (not built here) names a version.
func TestComposeImagesPinned(t *testing.T) {
	for _, s := range loadCompose(t).Services {
		if s.Build == nil && !imagePinned(s.Image) {
			t.Errorf("%s image %q is not pinned to a version", s.Name, s.Image)
		}
	}
}

// TestComposeSettingsForSmallHosts: images and limits are settings whose defaults are the public
// images and a big host's limits, so a private registry or a small engine needs no edited file.
func TestComposeSettingsForSmallHosts(t *testing.T) {
	p := loadCompose(t)
	for name, s := range likesServices(t, p) {
		if s.Build.Args["GO_IMAGE"] != nil || s.Build.Args["STATIC_IMAGE"] != nil {
			t.Errorf("%s passes GO_IMAGE/STATIC_IMAGE while unset; want build/Dockerfile's defaults to hold", name)
		}
		if s.NetworkMode == "none" {
			continue // it holds no sockets
		}
		if n := s.Ulimits["nofile"]; n == nil || n.Soft != 65536 || n.Hard != 65536 {
			t.Errorf("%s nofile %+v by default; want 65536", name, n)
		}
	}
	small := loadCompose(t, "NOFILE=20000", "REDIS_IMAGE=local/redis:7", "HAPROXY_IMAGE=local/haproxy:3",
		"GO_IMAGE=local/golang:1", "STATIC_IMAGE=local/static:nonroot")
	for name, s := range likesServices(t, small) {
		if n := s.Ulimits["nofile"]; s.NetworkMode != "none" && (n == nil || n.Soft != 20000 || n.Hard != 20000) {
			t.Errorf("NOFILE=20000: %s nofile %+v; want 20000", name, n)
		}
		for arg, want := range map[string]string{"GO_IMAGE": "local/golang:1", "STATIC_IMAGE": "local/static:nonroot"} {
			if got := s.Build.Args[arg]; got == nil || *got != want {
				t.Errorf("%s build arg %s = %v; want %s", name, arg, got, want)
			}
		}
	}
	for _, s := range composeRedisOf(t, small).all() {
		if s.Image != "local/redis:7" {
			t.Errorf("REDIS_IMAGE: %s image %s; want local/redis:7", s.Name, s.Image)
		}
	}
	if got := small.Services["haproxy"].Image; got != "local/haproxy:3" {
		t.Errorf("HAPROXY_IMAGE: haproxy image %s; want local/haproxy:3", got)
	}
}

// TestComposeRedisOnItsOwnNetwork: only the services that use Redis share its network, so a node
// can be cut off from Redis alone (docker network disconnect), its data nodes and Sentinels
// alike, while it still serves its viewers. loadgen is among them: it reads Redis's CPU and
// subscriptions (through the Sentinels).
func TestComposeRedisOnItsOwnNetwork(t *testing.T) {
	p := loadCompose(t)
	want := map[string][]string{
		"writer-svc": {"default", "redis"}, "fanout-svc": {"default", "redis"},
		"haproxy": {"default"}, "loadgen": {"default", "redis"},
	}
	for _, s := range composeRedisOf(t, p).all() {
		want[s.Name] = []string{"redis"}
	}
	for name, nets := range want {
		s := p.Services[name]
		var got []string
		for n := range s.Networks {
			got = append(got, n)
		}
		if len(got) == 0 {
			got = []string{"default"} // a service naming no network is on the default one
		}
		slices.Sort(got)
		if !slices.Equal(got, nets) {
			t.Errorf("%s is on networks %v; want %v", name, got, nets)
		}
	}
}

// TestComposeTrustsOnlyTheBalancer: the services believe X-Forwarded-For from haproxy alone, by
// its service name, not from all private address space (where any container could claim a client
// address of its choosing), and each fanout node caps the streams of one client address.
func TestComposeTrustsOnlyTheBalancer(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"writer-svc", "fanout-svc"} {
		if v := p.Services[name].Environment["TRUSTED_PROXIES"]; v == nil || *v != "haproxy" {
			t.Errorf("%s TRUSTED_PROXIES %v; want haproxy", name, v)
		}
	}
	if v := p.Services["fanout-svc"].Environment["MAX_VIEWERS_PER_IP"]; v == nil || *v == "" || *v == "0" {
		t.Errorf("fanout-svc MAX_VIEWERS_PER_IP %v; want a cap by default", v)
	}
}

package deploytest

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/routes/routestest"
)

// haproxyDuration parses an haproxy time value (default unit milliseconds).
func haproxyDuration(t *testing.T, v string) time.Duration {
	t.Helper()
	if v == "" {
		return 0
	}
	if _, err := strconv.Atoi(v); err == nil {
		v += "ms"
	}
	if strings.HasSuffix(v, "d") {
		n, err := strconv.Atoi(strings.TrimSuffix(v, "d"))
		if err != nil {
			t.Fatalf("haproxy duration %q: %v", v, err)
		}
		return time.Duration(n) * 24 * time.Hour
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("haproxy duration %q: %v", v, err)
	}
	return d
}

func bindPort(t *testing.T, cfg routestest.HAProxy, frontend string) string {
	t.Helper()
	addr := cfg.Value("frontend "+frontend, "bind")
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("frontend %s bind %q: %v", frontend, addr, err)
	}
	return port
}

// TestHAProxyRoutesToComposeServices checks that every backend server names a compose service
// and the port that service listens on, and that each public port reaches the right service.
func TestHAProxyRoutesToComposeServices(t *testing.T) {
	cfg := routestest.ReadHAProxy(t, filepath.Join(repoRoot, "compose", "haproxy.cfg"))
	p := loadCompose(t)
	backends := map[string]string{} // backend -> compose service
	for _, b := range cfg.Sections("backend") {
		servers := cfg.Servers(b)
		if len(servers) == 0 {
			t.Errorf("backend %s has no servers", b)
		}
		for _, addr := range servers {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Errorf("backend %s: server address %q: %v", b, addr, err)
				continue
			}
			s, ok := p.Services[host]
			if !ok {
				t.Errorf("backend %s routes to %s, which is no compose service", b, host)
				continue
			}
			if want := listenPort(t, s); port != want {
				t.Errorf("backend %s routes to %s:%s; %s listens on %s", b, host, port, host, want)
			}
			backends[b] = host
		}
	}
	routes := map[string]string{} // public port -> compose service
	for _, f := range cfg.Sections("frontend") {
		if b := cfg.Value("frontend "+f, "default_backend"); b != "" {
			if _, ok := backends[b]; !ok {
				t.Errorf("frontend %s: default_backend %s is not a backend", f, b)
			}
			routes[bindPort(t, cfg, f)] = backends[b]
		}
	}
	want := map[string]string{"8080": "writer-svc", "8090": "fanout-svc"}
	for port, svc := range want {
		if routes[port] != svc {
			t.Errorf("haproxy port %s routes to %q; want %s", port, routes[port], svc)
		}
	}
	var published []string
	for _, pc := range p.Services["haproxy"].Ports {
		published = append(published, strconv.Itoa(int(pc.Target)))
	}
	for _, f := range cfg.Sections("frontend") {
		if port := bindPort(t, cfg, f); !slices.Contains(published, port) {
			t.Errorf("frontend %s binds %s, which compose does not publish (publishes %v)", f, port, published)
		}
	}
}

// TestHAProxyStreamSettings checks what SSE needs from the balancer.
func TestHAProxyStreamSettings(t *testing.T) {
	cfg := routestest.ReadHAProxy(t, filepath.Join(repoRoot, "compose", "haproxy.cfg"))
	const fanout = "backend fanout-svc"
	if got := cfg.Value(fanout, "balance"); got != "leastconn" {
		t.Errorf("fanout balance %q; want leastconn", got)
	}
	// Every timeout of the stream path is STREAM_IDLE_TIMEOUT, so whichever applies to a silent
	// stream, it is that one (TestStreamIdleTimeoutFollowsHeartbeat checks its value).
	for _, l := range []struct{ section, kw string }{{fanout, "server"}, {fanout, "tunnel"}, {"frontend streams", "client"}} {
		if name, _, ok := routestest.EnvRef(cfg.Raw(l.section, "timeout", l.kw)); !ok || name != "STREAM_IDLE_TIMEOUT" {
			t.Errorf("%s timeout %s = %s; want \"${STREAM_IDLE_TIMEOUT-...}\"", l.section, l.kw, cfg.Raw(l.section, "timeout", l.kw))
		}
	}
	if d := haproxyDuration(t, cfg.Value("defaults", "timeout", "http-request")); d == 0 || d > 30*time.Second {
		t.Errorf("defaults timeout http-request = %v; want a bound of at most 30s", d)
	}
	for section, lines := range cfg {
		for _, l := range lines {
			if l[0] == "compression" || slices.Contains(l, "http-buffer-request") {
				t.Errorf("%s: %v would buffer or compress event streams", section, l)
			}
		}
	}
	for _, b := range cfg.Sections("backend") {
		if len(cfg.Lines("backend "+b, "option", "httpchk")) == 0 ||
			!slices.Equal(cfg.Lines("backend "+b, "http-check", "send")[0], []string{"http-check", "send", "meth", "GET", "uri", "/readyz"}) {
			t.Errorf("backend %s does not health check GET /readyz", b)
		}
	}
	def := cfg.Lines("defaults", "default-server")
	if len(def) == 0 || !slices.Contains(def[0], "resolvers") || !slices.Contains(def[0], "check") {
		t.Fatalf("default-server %v; want DNS resolvers and checks on every server", def)
	}
	resolvers := def[0][slices.Index(def[0], "resolvers")+1]
	if ns := cfg.Lines("resolvers "+resolvers, "nameserver"); len(ns) == 0 || ns[0][2] != "127.0.0.11:53" {
		t.Errorf("resolvers %s nameservers %v; want Compose's DNS at 127.0.0.11:53", resolvers, ns)
	}
}

// TestHAProxyConfigValid runs haproxy's own checker on the file compose mounts.
func TestHAProxyConfigValid(t *testing.T) {
	bin := routestest.HAProxyBinary(t)
	path := filepath.Join(repoRoot, "compose", "haproxy.cfg")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-c", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c -f %s: %v\n%s", path, err, out)
	}
	if strings.Contains(string(out), "WARNING") {
		t.Errorf("haproxy -c warns:\n%s", out)
	}
	var mounted bool
	for _, v := range loadCompose(t).Services["haproxy"].Volumes {
		mounted = mounted || (v.Source == path && v.Target == "/usr/local/etc/haproxy/haproxy.cfg" && v.ReadOnly)
	}
	if !mounted {
		t.Errorf("compose does not mount %s read-only at the image's config path", path)
	}
}

// TestStreamIdleTimeoutFollowsHeartbeat: a live node writes to every stream at least every
// HEARTBEAT_INTERVAL plus one sweep tick (a quarter interval), so the balancer's idle timeout
// must exceed that, and at two intervals a stream whose node is gone ends soon enough for its
// viewer to reconnect and converge within three. Checked for the defaults of haproxy.cfg and of
// docker-compose.yml, which must agree, and for settings a test would use.
func TestStreamIdleTimeoutFollowsHeartbeat(t *testing.T) {
	cfg := routestest.ReadHAProxy(t, filepath.Join(repoRoot, "compose", "haproxy.cfg"))
	cfgDefault := haproxyDuration(t, cfg.Value("backend fanout-svc", "timeout", "tunnel"))
	for _, env := range [][]string{nil, {"HEARTBEAT_INTERVAL=5s", "STREAM_IDLE_TIMEOUT=10s"}} {
		p := loadCompose(t, env...)
		hbVal := p.Services["fanout-svc"].Environment["HEARTBEAT_INTERVAL"]
		idleVal := p.Services["haproxy"].Environment["STREAM_IDLE_TIMEOUT"]
		if hbVal == nil || idleVal == nil {
			t.Fatalf("env %v: fanout-svc HEARTBEAT_INTERVAL %v, haproxy STREAM_IDLE_TIMEOUT %v; want both set", env, hbVal, idleVal)
		}
		hb, idle := haproxyDuration(t, *hbVal), haproxyDuration(t, *idleVal)
		if idle <= hb+hb/4 || idle > 2*hb {
			t.Errorf("env %v: STREAM_IDLE_TIMEOUT %v with HEARTBEAT_INTERVAL %v; want above %v and at most %v", env, idle, hb, hb+hb/4, 2*hb)
		}
		if env == nil && idle != cfgDefault {
			t.Errorf("docker-compose.yml's STREAM_IDLE_TIMEOUT default %v differs from haproxy.cfg's %v", idle, cfgDefault)
		}
	}
}

// TestHAProxyMaxconnFromEnvironment: maxconn is HAPROXY_MAXCONN, whose compose default fits the
// open-file limit compose gives the container.
func TestHAProxyMaxconnFromEnvironment(t *testing.T) {
	cfg := routestest.ReadHAProxy(t, filepath.Join(repoRoot, "compose", "haproxy.cfg"))
	name, def, ok := routestest.EnvRef(cfg.Raw("global", "maxconn"))
	if !ok || name != "HAPROXY_MAXCONN" {
		t.Fatalf("global maxconn %s; want \"${HAPROXY_MAXCONN-...}\"", cfg.Raw("global", "maxconn"))
	}
	for _, env := range [][]string{nil, {"HAPROXY_MAXCONN=8000", "HAPROXY_NOFILE=20000"}} {
		s := loadCompose(t, env...).Services["haproxy"]
		v := s.Environment["HAPROXY_MAXCONN"]
		if v == nil {
			t.Fatalf("compose does not pass HAPROXY_MAXCONN to haproxy")
		}
		if env == nil && *v != def {
			t.Errorf("compose HAPROXY_MAXCONN default %s differs from haproxy.cfg's %s", *v, def)
		}
		maxconn, err := strconv.Atoi(*v)
		if err != nil {
			t.Fatalf("HAPROXY_MAXCONN %q: %v", *v, err)
		}
		nofile := s.Ulimits["nofile"]
		if nofile == nil || nofile.Hard < 2*maxconn+200 || nofile.Soft != nofile.Hard {
			t.Errorf("env %v: haproxy nofile %+v for maxconn %d; want soft = hard >= %d", env, nofile, maxconn, 2*maxconn+200)
		}
	}
}

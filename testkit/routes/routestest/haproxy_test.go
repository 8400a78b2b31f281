package routestest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
)

// testHAProxy exercises what Route follows: http-request rules in order (allow, deny), named and
// anonymous ACLs with negation and alternatives, use_backend, both default_backends, monitor-uri
// and the stats page.
const testHAProxy = `
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
    default_backend fallback

frontend api
    bind :8080
    acl internal path /metrics /healthz
    acl internal path_beg /admin/
    acl trusted path_beg /admin/open
    http-request allow if trusted
    http-request deny deny_status 404 if internal
    http-request deny if { path_dir secret } METH_POST
    use_backend writers if { path_beg -i /like } || { path,url_dec /count }
    use_backend readers if !{ method GET } { path_end .json }
    default_backend pages

frontend bare
    bind 127.0.0.1:8081

frontend monitor
    bind :8404
    monitor-uri /healthz
    stats enable
    stats uri /stats

backend writers
    server-template w 1-4 writer-svc:8080
backend readers
    server r1 reader:9000 check
backend pages
    server p1 pages:80
backend fallback
    server f1 fallback:80
`

// routeCases are requests through testHAProxy and the backend each reaches ("" when haproxy
// answers itself).
var routeCases = []struct {
	port, method, path string
	want               string
}{
	{"8080", "GET", "/like/42", "writers"},
	{"8080", "GET", "/LIKE/42", "writers"},    // -i
	{"8080", "GET", "/%63ount", "writers"},    // url_dec
	{"8080", "GET", "/count/42", "pages"},     // path is exact
	{"8080", "GET", "/metrics", ""},           // denied
	{"8080", "GET", "/metrics/x", "pages"},    // path is exact
	{"8080", "GET", "/admin/users", ""},       // path_beg
	{"8080", "GET", "/admin/open/x", "pages"}, // allow ends the http-request rules
	{"8080", "POST", "/a/secret/b", ""},       // anonymous dir ACL AND method
	{"8080", "GET", "/a/secret/b", "pages"},   // ... only for POST
	{"8080", "POST", "/a/secrets/b", "pages"}, // dir matches whole elements
	{"8080", "PUT", "/x/y.json", "readers"},   // negated anonymous ACL
	{"8080", "GET", "/x/y.json", "pages"},     // ... GET is excluded
	{"8081", "GET", "/anything", "fallback"},  // defaults' default_backend
	{"8404", "GET", "/healthz", ""},           // monitor-uri
	{"8404", "GET", "/stats;csv", ""},         // the stats page
	{"8404", "GET", "/other", "fallback"},     // defaults again
}

func TestHAProxyRoute(t *testing.T) {
	cfg := ParseHAProxy(testHAProxy)
	for _, tt := range routeCases {
		got, err := cfg.Route(tt.port, tt.method, tt.path)
		if err != nil || got != tt.want {
			t.Errorf("Route(%s, %s %s) = %q, %v; want %q", tt.port, tt.method, tt.path, got, err, tt.want)
		}
	}
}

// TestHAProxyAgrees sends routeCases through a real haproxy running testHAProxy, with a server
// per backend that names itself in a header: Route must follow the file as haproxy does.
func TestHAProxyAgrees(t *testing.T) {
	bin := HAProxyBinary(t)
	cfg := testHAProxy
	for name, addr := range map[string]string{"writers": "writer-svc:8080", "readers": "reader:9000", "pages": "pages:80", "fallback": "fallback:80"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Backend", name) }))
		t.Cleanup(srv.Close)
		cfg = strings.ReplaceAll(cfg, " "+addr, " "+srv.Listener.Addr().String())
	}
	ports := map[string]string{}
	for _, bind := range []struct{ port, from string }{{"8080", ":8080"}, {"8081", "127.0.0.1:8081"}, {"8404", ":8404"}} {
		ports[bind.port] = freeport.Addr(t)
		cfg = strings.Replace(cfg, "bind "+bind.from+"\n", "bind "+ports[bind.port]+"\n", 1)
	}
	runHAProxy(t, bin, cfg, "http://"+ports["8404"]+"/healthz")
	client := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	for _, tt := range routeCases {
		req, err := http.NewRequest(tt.method, "http://"+ports[tt.port]+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s through haproxy: %v", tt.method, tt.path, err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Backend"); got != tt.want {
			t.Errorf("haproxy :%s sends %s %s to %q (status %d); Route says %q", tt.port, tt.method, tt.path, got, resp.StatusCode, tt.want)
		}
	}
}

// runHAProxy runs haproxy on the configuration cfg until the test ends, once ready answers 200.
func runHAProxy(t *testing.T, bin, cfg, ready string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-f", path, "-db")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out.String())
		}
	})
	poll.Check(t, 10*time.Second, func() error {
		resp, err := http.Get(ready)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d", ready, resp.StatusCode)
		}
		return nil
	})
}

// TestHAProxyRouteRefusesWhatItCannotFollow: a construct that could send a request elsewhere is
// an error, never a guess.
func TestHAProxyRouteRefusesWhatItCannotFollow(t *testing.T) {
	tests := []struct{ name, frontend, want string }{
		{"tcp rules", "tcp-request content reject", "cannot follow"},
		{"path rewrite", "http-request set-path /x", "cannot follow http-request set-path"},
		{"unknown fetch", "use_backend b if { hdr(host) -m str x }", "cannot evaluate"},
		{"unknown acl", "use_backend b if nosuchacl", "not defined"},
		{"dynamic backend", "use_backend %[path] if TRUE", "only a named backend"},
		{"acl file", "use_backend b if { path -f /etc/paths }", "flag -f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ParseHAProxy("frontend f\n    bind :80\n    " + tt.frontend + "\nbackend b\n    server s x:1\n")
			_, err := cfg.Route("80", "GET", "/x")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Route with %q: error %v; want one containing %q", tt.frontend, err, tt.want)
			}
		})
	}
	if _, err := ParseHAProxy(testHAProxy).Route("9999", "GET", "/"); err == nil {
		t.Errorf("Route on a port no frontend binds: no error; want one")
	}
}

// TestHAProxyRouteLeavesConfigIntact: evaluating "!name" must not rewrite the parsed file.
func TestHAProxyRouteLeavesConfigIntact(t *testing.T) {
	cfg := ParseHAProxy("frontend f\n    bind :80\n    acl a path /a\n    use_backend b if !a\nbackend b\n    server s x:1\n")
	before := slices.Clone(cfg.Lines("frontend f", "use_backend")[0])
	for range 2 {
		if got, err := cfg.Route("80", "GET", "/b"); err != nil || got != "b" {
			t.Fatalf("Route(/b) = %q, %v; want b", got, err)
		}
	}
	if after := cfg.Lines("frontend f", "use_backend")[0]; !slices.Equal(after, before) {
		t.Errorf("use_backend line after Route %v; want %v", after, before)
	}
}

func TestHAProxyParse(t *testing.T) {
	cfg := ParseHAProxy(testHAProxy)
	if got, want := cfg.Sections("frontend"), []string{"api", "bare", "monitor"}; !slices.Equal(got, want) {
		t.Errorf("Sections(frontend) = %v; want %v", got, want)
	}
	if got := cfg.Frontends("8081"); !slices.Equal(got, []string{"bare"}) {
		t.Errorf("Frontends(8081) = %v; want [bare]", got)
	}
	if got := cfg.Servers("writers"); !slices.Equal(got, []string{"writer-svc:8080"}) {
		t.Errorf("Servers(writers) = %v; want [writer-svc:8080]", got)
	}
	if got := cfg.Value("frontend api", "default_backend"); got != "pages" {
		t.Errorf("Value(default_backend) = %q; want pages", got)
	}
	env := ParseHAProxy("global\n    maxconn \"${MAXCONN-100}\" # comment\n")
	if got, raw := env.Value("global", "maxconn"), env.Raw("global", "maxconn"); got != "100" || raw != `"${MAXCONN-100}"` {
		t.Errorf("maxconn value %q raw %q; want 100 and the reference as written", got, raw)
	}
}

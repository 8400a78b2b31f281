package routestest

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/likes/likes/testkit/routes"
)

// SampleParam stands in for a route parameter and SampleFile for the file that a trailing
// wildcard names, to make a request path of a route pattern.
const (
	SampleParam = "42"
	SampleFile  = "app.js"
)

// Route is one route of a service's router and a request path that reaches it.
type Route struct {
	Method  string
	Pattern string // as chi reports it: "/like/{postID}", "/assets/*"
	Path    string // Pattern with SampleParam and SampleFile in place of parameters and wildcard
}

// Walk returns every route of the router r (chi.Walk) with its sample path, sorted by pattern and
// method, and checks that r routes each sample path to the route's own pattern, so that no sample
// stands for a path the service does not serve.
func Walk(t testing.TB, r http.Handler) []Route {
	t.Helper()
	out, err := walk(r)
	if err != nil {
		t.Fatalf("walk the routes: %v", err)
	}
	return out
}

func walk(r http.Handler) ([]Route, error) {
	mux, ok := r.(chi.Routes)
	if !ok {
		return nil, fmt.Errorf("the router is a %T, not a chi router; routestest walks chi routers", r)
	}
	var out []Route
	err := chi.Walk(mux, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		path := Sample(pattern)
		if got := mux.Find(chi.NewRouteContext(), method, path); got != pattern {
			return fmt.Errorf("%s %s: its sample path %s finds route %q; change Sample", method, pattern, path, got)
		}
		out = append(out, Route{Method: method, Pattern: pattern, Path: path})
		return nil
	})
	if err == nil && len(out) == 0 {
		err = errors.New("the router has no routes")
	}
	slices.SortFunc(out, func(a, b Route) int { // chi walks a map: make failures read the same each run
		return cmp.Or(strings.Compare(a.Pattern, b.Pattern), strings.Compare(a.Method, b.Method))
	})
	return out, err
}

var paramPattern = regexp.MustCompile(`\{[^}]*\}`)

// Sample turns a chi pattern into a request path: each {param} becomes SampleParam and a
// trailing wildcard SampleFile ("/like/{postID}" -> "/like/42", "/assets/*" -> "/assets/app.js").
func Sample(pattern string) string {
	p := paramPattern.ReplaceAllString(pattern, SampleParam)
	if s, ok := strings.CutSuffix(p, "*"); ok {
		p = s + SampleFile
	}
	return p
}

// Manifests is how requests from outside reach the services: the Ingresses of deploy/base and
// the frontends of compose/haproxy.cfg.
type Manifests struct {
	Ingresses []*networkingv1.Ingress
	HAProxy   HAProxy
}

// Load reads the manifests under root, the repository root.
func Load(t testing.TB, root string) *Manifests {
	t.Helper()
	return &Manifests{
		Ingresses: LoadIngresses(t, root),
		HAProxy:   ReadHAProxy(t, filepath.Join(root, "compose", "haproxy.cfg")),
	}
}

// Service is one service as the manifests must route it.
type Service struct {
	Name   string  // its Kubernetes Service and its compose service: "writer-svc"
	Port   string  // the haproxy port that its public routes arrive on: "8080"
	Routes []Route // its router's routes (Walk)
}

// Problems lists every way the manifests route s wrongly, one sentence each:
//   - a public route (routes.Public) that an Ingress host, or haproxy on s.Port, does not send to
//     s.Name;
//   - an internal route of s, or a path within an internal prefix (routes.Internal; covering
//     routes no service has yet), that an Ingress or any haproxy frontend sends to a service;
//   - an Ingress path sent to s.Name that no public route of s answers (a typo, a removed route);
//   - anything in the manifests this package cannot follow.
func (m *Manifests) Problems(s Service) []string {
	var out []string
	out = append(out, m.routeProblems(s)...)
	out = append(out, m.internalProblems()...)
	out = append(out, m.deadIngressPaths(s)...)
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(p string) bool {
		dup := seen[p]
		seen[p] = true
		return dup
	})
}

// routeProblems checks each route of s: public ones reach s.Name, internal ones nothing.
func (m *Manifests) routeProblems(s Service) []string {
	var out []string
	hosts := IngressHosts(m.Ingresses)
	if len(hosts) == 0 {
		out = append(out, "the Ingresses have no rules")
	}
	if !slices.ContainsFunc(s.Routes, func(r Route) bool { return routes.Public(r.Pattern) }) {
		out = append(out, fmt.Sprintf("%s has no public route: nothing to check", s.Name))
	}
	for _, r := range s.Routes {
		want := ""
		if routes.Public(r.Pattern) {
			want = s.Name
			out = append(out, m.haproxyProblem(s.Port, r, want)...)
		} else {
			out = append(out, m.haproxyLeaks(r.Method, r.Path, "route "+r.Pattern)...)
		}
		for _, h := range hosts {
			got, err := IngressRoute(m.Ingresses, h, r.Path)
			switch {
			case err != nil:
				out = append(out, err.Error())
			case got != want:
				out = append(out, fmt.Sprintf("Ingress host %q sends %s (route %s) to %s; want %s", h, r.Path, r.Pattern, orNone(got), orNone(want)))
			}
		}
	}
	return out
}

// haproxyProblem checks that haproxy's frontend on port sends r to the service want.
func (m *Manifests) haproxyProblem(port string, r Route, want string) []string {
	b, err := m.HAProxy.Route(port, r.Method, r.Path)
	if err != nil {
		return []string{err.Error()}
	}
	got, err := m.backendService(b)
	if err != nil {
		return []string{err.Error()}
	}
	if got != want {
		return []string{fmt.Sprintf("haproxy :%s sends %s %s (route %s) to %s; want %s", port, r.Method, r.Path, r.Pattern, orNone(got), want)}
	}
	return nil
}

// haproxyLeaks lists the frontends that send an internal request to a service.
func (m *Manifests) haproxyLeaks(method, path, what string) []string {
	var out []string
	for _, f := range m.HAProxy.Sections("frontend") {
		b, err := m.HAProxy.FrontendRoute(f, method, path)
		svc := ""
		if err == nil {
			svc, err = m.backendService(b)
		}
		switch {
		case err != nil:
			out = append(out, err.Error())
		case svc != "":
			out = append(out, fmt.Sprintf("haproxy frontend %s sends %s %s (%s, internal) to %s; want it denied", f, method, path, what, svc))
		}
	}
	return out
}

// internalProblems checks every internal prefix, and a path under it, against every Ingress
// host and haproxy frontend: nothing may route them, whether or not a service serves them yet.
func (m *Manifests) internalProblems() []string {
	var out []string
	for _, prefix := range routes.Internal() {
		for _, path := range []string{prefix, prefix + "/" + SampleParam} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				out = append(out, m.haproxyLeaks(method, path, "within "+prefix)...)
			}
			for _, h := range IngressHosts(m.Ingresses) {
				got, err := IngressRoute(m.Ingresses, h, path)
				switch {
				case err != nil:
					out = append(out, err.Error())
				case got != "":
					out = append(out, fmt.Sprintf("Ingress host %q sends %s (within %s, internal) to %s; want it unrouted", h, path, prefix, got))
				}
			}
		}
	}
	return out
}

// deadIngressPaths lists the Ingress paths sent to s that no public route of s answers.
func (m *Manifests) deadIngressPaths(s Service) []string {
	var out []string
	for _, ing := range m.Ingresses {
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil {
				continue
			}
			for i := range rule.HTTP.Paths {
				p := &rule.HTTP.Paths[i]
				if backendName(p.Backend) != s.Name {
					continue
				}
				if !slices.ContainsFunc(s.Routes, func(r Route) bool {
					ok, err := pathMatches(p, r.Path)
					return err == nil && ok && routes.Public(r.Pattern)
				}) {
					out = append(out, fmt.Sprintf("Ingress %s sends %s to %s, which serves no public route there", ing.Name, p.Path, s.Name))
				}
			}
		}
	}
	return out
}

// backendService returns the compose service that an haproxy backend's servers name ("" for
// no backend): every server of the backend must name the same one.
func (m *Manifests) backendService(backend string) (string, error) {
	if backend == "" {
		return "", nil
	}
	var host string
	for _, addr := range m.HAProxy.Servers(backend) {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("haproxy backend %s: server %q: %w", backend, addr, err)
		}
		if host != "" && h != host {
			return "", fmt.Errorf("haproxy backend %s mixes servers of %s and %s", backend, host, h)
		}
		host = h
	}
	if host == "" {
		return "", fmt.Errorf("haproxy backend %s has no servers", backend)
	}
	return host, nil
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

package routestest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/likes/likes/testkit/routes"
)

// LoadIngresses decodes the Ingresses of deploy/base (ingress-*.yaml) under root, the repository
// root, strictly: an unknown field fails the test, as `kubectl apply --validate=strict` would.
func LoadIngresses(t testing.TB, root string) []*networkingv1.Ingress {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy", "base", "ingress-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no deploy/base/ingress-*.yaml under %s", root)
	}
	var out []*networkingv1.Ingress
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ing, err := DecodeIngress(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, ing)
	}
	return out
}

// DecodeIngress decodes one networking.k8s.io/v1 Ingress, strictly.
func DecodeIngress(raw []byte) (*networkingv1.Ingress, error) {
	var ing networkingv1.Ingress
	if err := yaml.UnmarshalStrict(raw, &ing); err != nil {
		return nil, err
	}
	if ing.APIVersion != "networking.k8s.io/v1" || ing.Kind != "Ingress" {
		return nil, fmt.Errorf("%s %s; want a networking.k8s.io/v1 Ingress", ing.APIVersion, ing.Kind)
	}
	return &ing, nil
}

// IngressHosts returns the hosts the Ingresses' rules name, sorted; "" stands for a rule without
// a host, which takes every host's requests.
func IngressHosts(ings []*networkingv1.Ingress) []string {
	var hosts []string
	for _, ing := range ings {
		for _, r := range ing.Spec.Rules {
			if !slices.Contains(hosts, r.Host) {
				hosts = append(hosts, r.Host)
			}
		}
	}
	slices.Sort(hosts)
	return hosts
}

// IngressRoute returns the backend that the Ingresses send a request for path on host to, as a
// controller merges them: the rules for host and those without a host compete, the longest
// matching path wins and Exact beats Prefix at equal length (Kubernetes' precedence); when no
// path matches, a defaultBackend takes the request. The backend is a Service name, or
// "resource <kind>/<name>"; "" when nothing takes the request.
func IngressRoute(ings []*networkingv1.Ingress, host, path string) (string, error) {
	var best *networkingv1.HTTPIngressPath
	for _, ing := range ings {
		for _, r := range ing.Spec.Rules {
			if (r.Host != host && r.Host != "") || r.HTTP == nil {
				continue
			}
			for i := range r.HTTP.Paths {
				p := &r.HTTP.Paths[i]
				ok, err := pathMatches(p, path)
				if err != nil {
					return "", fmt.Errorf("ingress %s: %w", ing.Name, err)
				}
				if ok && (best == nil || outranks(p, best)) {
					best = p
				}
			}
		}
	}
	if best != nil {
		return backendName(best.Backend), nil
	}
	for _, ing := range ings {
		if b := ing.Spec.DefaultBackend; b != nil {
			return backendName(*b), nil
		}
	}
	return "", nil
}

// pathMatches applies an Ingress path to a request path: Exact must equal it, Prefix must hold
// it element by element (routes.Within).
func pathMatches(p *networkingv1.HTTPIngressPath, path string) (bool, error) {
	if p.PathType == nil {
		return false, fmt.Errorf("path %s has no pathType", p.Path)
	}
	switch *p.PathType {
	case networkingv1.PathTypeExact:
		return path == p.Path, nil
	case networkingv1.PathTypePrefix:
		return routes.Within(path, p.Path), nil
	}
	return false, fmt.Errorf("path %s: pathType %s depends on the controller; use Exact or Prefix", p.Path, *p.PathType)
}

// outranks reports whether matching path p takes precedence over matching path q.
func outranks(p, q *networkingv1.HTTPIngressPath) bool {
	if len(p.Path) != len(q.Path) {
		return len(p.Path) > len(q.Path)
	}
	return *p.PathType == networkingv1.PathTypeExact && *q.PathType != networkingv1.PathTypeExact
}

func backendName(b networkingv1.IngressBackend) string {
	switch {
	case b.Service != nil:
		return b.Service.Name
	case b.Resource != nil:
		return "resource " + b.Resource.Kind + "/" + b.Resource.Name
	}
	return ""
}

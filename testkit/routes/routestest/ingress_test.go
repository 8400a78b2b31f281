package routestest

import (
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

// ingressPath is one path of a test Ingress: "Prefix /like writer-svc".
func ingressPath(spec string) networkingv1.HTTPIngressPath {
	f := strings.Fields(spec)
	typ := networkingv1.PathType(f[0])
	return networkingv1.HTTPIngressPath{
		Path: f[1], PathType: &typ,
		Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: f[2]}},
	}
}

// testIngress is an Ingress named name with one rule for host holding paths.
func testIngress(name, host string, paths ...string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{}
	ing.Name = name
	rule := networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}}
	for _, p := range paths {
		rule.HTTP.Paths = append(rule.HTTP.Paths, ingressPath(p))
	}
	ing.Spec.Rules = []networkingv1.IngressRule{rule}
	return ing
}

func TestIngressRoute(t *testing.T) {
	ings := []*networkingv1.Ingress{
		testIngress("a", "h", "Prefix /like writer", "Exact / page", "Prefix /assets/ page", "Prefix /x exact-loses", "Exact /x exact-wins"),
		testIngress("b", "h", "Prefix /like/special other", "Prefix /api api"),
		testIngress("c", "", "Prefix /any anyhost"),
	}
	tests := []struct{ host, path, want string }{
		{"h", "/like/42", "writer"},
		{"h", "/like", "writer"},
		{"h", "/likes", ""}, // element-wise: /like does not hold /likes
		{"h", "/", "page"},
		{"h", "/index.html", ""}, // "/" is Exact
		{"h", "/assets/app.js", "page"},
		{"h", "/assets", "page"},          // a trailing slash on a Prefix is ignored
		{"h", "/like/special/1", "other"}, // the longest path wins, across Ingresses
		{"h", "/x", "exact-wins"},         // Exact beats Prefix at equal length
		{"h", "/x/y", "exact-loses"},
		{"h", "/any/1", "anyhost"}, // a rule without a host takes every host
		{"other", "/like/42", ""},
		{"other", "/any", "anyhost"},
	}
	for _, tt := range tests {
		got, err := IngressRoute(ings, tt.host, tt.path)
		if err != nil || got != tt.want {
			t.Errorf("IngressRoute(%s, %s) = %q, %v; want %q", tt.host, tt.path, got, err, tt.want)
		}
	}
	withDefault := slices.Concat(ings, []*networkingv1.Ingress{{Spec: networkingv1.IngressSpec{
		DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "catchall"}},
	}}})
	if got, _ := IngressRoute(withDefault, "h", "/metrics"); got != "catchall" {
		t.Errorf("with a defaultBackend, /metrics goes to %q; want catchall", got)
	}
	odd := []*networkingv1.Ingress{testIngress("odd", "h", "ImplementationSpecific /x svc")}
	if _, err := IngressRoute(odd, "h", "/x"); err == nil || !strings.Contains(err.Error(), "depends on the controller") {
		t.Errorf("ImplementationSpecific path: error %v; want one saying it depends on the controller", err)
	}
}

func TestDecodeIngress(t *testing.T) {
	const good = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: x}
spec:
  rules:
    - host: h
      http:
        paths:
          - {path: /like, pathType: Prefix, backend: {service: {name: writer-svc, port: {name: http}}}}
`
	ing, err := DecodeIngress([]byte(good))
	if err != nil {
		t.Fatalf("decode a valid Ingress: %v", err)
	}
	if got, _ := IngressRoute([]*networkingv1.Ingress{ing}, "h", "/like/1"); got != "writer-svc" {
		t.Errorf("decoded Ingress routes /like/1 to %q; want writer-svc", got)
	}
	for name, bad := range map[string]string{
		"unknown field": strings.Replace(good, "pathType:", "pathKind:", 1),
		"another kind":  strings.Replace(good, "kind: Ingress", "kind: Service", 1),
		"old API":       strings.Replace(good, "networking.k8s.io/v1", "extensions/v1beta1", 1),
	} {
		if _, err := DecodeIngress([]byte(bad)); err == nil {
			t.Errorf("%s: decoded without error; want one", name)
		}
	}
}

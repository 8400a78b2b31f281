package routestest

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	networkingv1 "k8s.io/api/networking/v1"
)

func TestSample(t *testing.T) {
	tests := []struct{ give, want string }{
		{"/like/{postID}", "/like/42"},
		{"/sse", "/sse"},
		{"/assets/*", "/assets/app.js"},
		{"/n/{id:[0-9]+}/x", "/n/42/x"},
		{"/", "/"},
	}
	for _, tt := range tests {
		if got := Sample(tt.give); got != tt.want {
			t.Errorf("Sample(%q) = %q; want %q", tt.give, got, tt.want)
		}
	}
}

func noop(http.ResponseWriter, *http.Request) {}

// testRouter is a small writer: a like API, a read, the metrics, and a route under /admin.
func testRouter() chi.Router {
	r := chi.NewRouter()
	r.Get("/metrics", noop)
	r.Group(func(r chi.Router) {
		r.Post("/like/{postID}", noop)
		r.Get("/likes", noop)
	})
	r.Post("/admin/drain", noop)
	return r
}

func TestWalk(t *testing.T) {
	got := Walk(t, testRouter())
	want := []Route{
		{"POST", "/admin/drain", "/admin/drain"},
		{"POST", "/like/{postID}", "/like/42"},
		{"GET", "/likes", "/likes"},
		{"GET", "/metrics", "/metrics"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Walk = %v; want %v", got, want)
	}
	r := chi.NewRouter()
	r.Get("/tag/{name:[a-z]+}", noop) // "42" is no name: the sample would test another path
	if _, err := walk(r); err == nil || !strings.Contains(err.Error(), "change Sample") {
		t.Errorf("walk with an unsampleable route: error %v; want one saying to change Sample", err)
	}
}

// goodHAProxy denies every internal prefix on its one public port, as compose/haproxy.cfg must.
const goodHAProxy = `
frontend likes
    bind :8080
    acl internal path /metrics /healthz /readyz /admin
    acl internal path_beg /metrics/ /healthz/ /readyz/ /admin/
    http-request deny deny_status 404 if internal
    default_backend writer-svc
backend writer-svc
    server-template writer 1-4 writer-svc:8080
backend fanout-svc
    server fanout fanout-svc:8090
`

func TestProblems(t *testing.T) {
	routes := Walk(t, testRouter())
	goodIngress := func() []*networkingv1.Ingress {
		return []*networkingv1.Ingress{testIngress("likes", "h", "Prefix /like writer-svc", "Exact /likes writer-svc")}
	}
	tests := []struct {
		name      string
		ingresses []*networkingv1.Ingress
		haproxy   string
		want      string // a substring of one problem; "" for none
	}{
		{"routed right", goodIngress(), goodHAProxy, ""},
		{"forgotten route", []*networkingv1.Ingress{testIngress("likes", "h", "Prefix /like writer-svc")}, goodHAProxy,
			`Ingress host "h" sends /likes (route /likes) to nothing; want writer-svc`},
		{"catch-all Ingress leaks metrics", append(goodIngress(), testIngress("page", "h", "Prefix / fanout-svc")), goodHAProxy,
			`Ingress host "h" sends /metrics (route /metrics) to fanout-svc; want nothing`},
		{"catch-all Ingress leaks future admin", append(goodIngress(), testIngress("page", "h", "Prefix / fanout-svc")), goodHAProxy,
			`sends /healthz/42 (within /healthz, internal) to fanout-svc`},
		{"dead Ingress path", append(goodIngress(), testIngress("typo", "h", "Prefix /lik writer-svc")), goodHAProxy,
			"Ingress typo sends /lik to writer-svc, which serves no public route there"},
		{"Ingress sends the route elsewhere", []*networkingv1.Ingress{testIngress("likes", "h", "Prefix /like writer-svc", "Exact /likes fanout-svc")}, goodHAProxy,
			"sends /likes (route /likes) to fanout-svc; want writer-svc"},
		{"haproxy forwards metrics", goodIngress(), strings.Replace(goodHAProxy, "http-request deny", "http-request allow", 1),
			"haproxy frontend likes sends GET /metrics (route /metrics, internal) to writer-svc; want it denied"},
		{"haproxy forwards admin", goodIngress(), strings.Replace(goodHAProxy, " /admin/\n", "\n", 1),
			"sends POST /admin/drain (route /admin/drain, internal) to writer-svc"},
		{"haproxy sends the port elsewhere", goodIngress(), strings.Replace(goodHAProxy, "default_backend writer-svc", "default_backend fanout-svc", 1),
			"haproxy :8080 sends POST /like/42 (route /like/{postID}) to fanout-svc; want writer-svc"},
		{"haproxy construct it cannot follow", goodIngress(), strings.Replace(goodHAProxy, "    default_backend", "    http-request set-path /x\n    default_backend", 1),
			"cannot follow http-request set-path"},
		{"no Ingress rules", nil, goodHAProxy, "the Ingresses have no rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manifests{Ingresses: tt.ingresses, HAProxy: ParseHAProxy(tt.haproxy)}
			got := m.Problems(Service{Name: "writer-svc", Port: "8080", Routes: routes})
			if tt.want == "" {
				if len(got) > 0 {
					t.Errorf("problems:\n%s\nwant none", strings.Join(got, "\n"))
				}
				return
			}
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("problems:\n%s\nwant one containing %q", strings.Join(got, "\n"), tt.want)
			}
		})
	}
}

// TestProblemsWithoutPublicRoutes: a walk that found nothing public checks nothing, and says so.
func TestProblemsWithoutPublicRoutes(t *testing.T) {
	m := &Manifests{Ingresses: []*networkingv1.Ingress{testIngress("likes", "h", "Prefix /like writer-svc")}, HAProxy: ParseHAProxy(goodHAProxy)}
	got := m.Problems(Service{Name: "writer-svc", Port: "8080", Routes: []Route{{"GET", "/metrics", "/metrics"}}})
	if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, "no public route") }) {
		t.Errorf("problems %q; want one saying writer-svc has no public route", got)
	}
}

package deploytest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/likes/likes/testkit/routes/routestest"
)

// What deploy/base/networkpolicy-*.yaml document: the namespaces their namespaceSelectors name by
// default, and the labels a pod of the likes namespace opts in with.
const (
	ingressNamespace    = "haproxy-controller" // networkpolicy-http-ingress.yaml
	monitoringNamespace = "monitoring"         // networkpolicy-metrics.yaml
)

var (
	redisClientLabels    = map[string]string{"likes.io/redis-client": "monitor"} // networkpolicy-redis.yaml
	benchClientLabels    = map[string]string{"likes.io/bench-client": "true"}    // networkpolicy-http-ingress.yaml
	metricsScraperLabels = map[string]string{"likes.io/metrics-scraper": "true"} // networkpolicy-metrics.yaml
)

// The policies by name, and the default deny among them.
const (
	policyDefaultDeny = "default-deny-ingress"
	policyRedis       = "redis-clients"
	policyHTTP        = "http-from-ingress"
	policyMetrics     = "metrics-from-monitoring"
)

// netWorld is a render's NetworkPolicies and the pods they meet: those of its workloads (from
// their pod templates) and, beside them, pods the render does not have but a cluster would.
type netWorld struct {
	namespace string
	policies  []*networkingv1.NetworkPolicy
	workloads []string // the names of the render's Deployments, StatefulSets and Jobs
	pods      map[string]netPod
}

// newNetWorld builds the world of objs, whose objects are in namespace (kustomize sets it; the
// files of deploy/base name none).
func newNetWorld(t *testing.T, objs *kubeObjects, namespace string) *netWorld {
	t.Helper()
	ns, ok := objs.namespaces[namespace]
	if !ok {
		t.Fatalf("no Namespace %s", namespace)
	}
	w := &netWorld{namespace: namespace, pods: map[string]netPod{}}
	for _, p := range objs.policies {
		p = p.DeepCopy()
		if p.Namespace == "" {
			p.Namespace = namespace
		}
		w.policies = append(w.policies, p)
	}
	slices.SortFunc(w.policies, func(a, b *networkingv1.NetworkPolicy) int { return strings.Compare(a.Name, b.Name) })
	inNS := func(name string, tmpl corev1.PodTemplateSpec) {
		if _, dup := w.pods[name]; dup {
			t.Fatalf("two workloads named %s", name)
		}
		var ports []corev1.ContainerPort
		for _, c := range tmpl.Spec.Containers {
			ports = append(ports, c.Ports...)
		}
		w.pods[name] = netPod{name: name, namespace: namespace, nsLabels: namespaceLabels(namespace, ns.Labels), labels: tmpl.Labels, ports: ports}
		w.workloads = append(w.workloads, name)
	}
	for _, d := range objs.deployments {
		inNS(d.Name, d.Spec.Template)
	}
	for _, s := range objs.statefulSets {
		inNS(s.Name, s.Spec.Template)
	}
	for _, j := range objs.jobs {
		inNS(j.Name, j.Spec.Template)
	}
	slices.Sort(w.workloads)
	other := func(name, namespace string, podLabels ...map[string]string) {
		set := labels.Set{}
		for _, l := range podLabels {
			for k, v := range l {
				set[k] = v
			}
		}
		nsl := namespaceLabels(namespace, nil)
		if namespace == w.namespace {
			nsl = namespaceLabels(namespace, ns.Labels)
		}
		w.pods[name] = netPod{name: name, namespace: namespace, nsLabels: nsl, labels: set}
	}
	other("debug", namespace, map[string]string{"run": "debug"}) // `kubectl run debug`: no opt-in
	other("redis-monitor", namespace, redisClientLabels)
	other("bench", namespace, benchClientLabels)
	other("scraper", namespace, metricsScraperLabels)
	other("ingress-controller", ingressNamespace, map[string]string{"app.kubernetes.io/name": "kubernetes-ingress"})
	other("prometheus", monitoringNamespace, map[string]string{"app.kubernetes.io/name": "prometheus"})
	other("stranger", "default", map[string]string{"run": "curl"})
	// A pod of another namespace that wears every label the policies name: podSelector peers
	// select this namespace's pods only.
	other("impostor", "elsewhere", w.pod(t, "writer-svc").labels, redisClientLabels, benchClientLabels, metricsScraperLabels)
	// A workload the base does not list, serving HTTP: the default deny keeps it closed.
	w.pods["newcomer"] = netPod{name: "newcomer", namespace: namespace, nsLabels: namespaceLabels(namespace, ns.Labels),
		labels: labels.Set{"app.kubernetes.io/name": "newcomer"}, ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	return w
}

// pod returns the pod named name, failing the test when there is none.
func (w *netWorld) pod(t *testing.T, name string) netPod {
	t.Helper()
	p, ok := w.pods[name]
	if !ok {
		t.Fatalf("no pod %s in the world (workloads %v)", name, w.workloads)
	}
	return p
}

// netCase is one TCP connection and its expected fate: admitted by exactly the policy by, or,
// with by "", refused.
type netCase struct {
	from, to string
	port     int32
	by       string
	why      string
}

// netCases: for each policy of the base, connections it admits and connections it refuses.
var netCases = []netCase{
	// redis-clients: the data nodes' 6379 and the Sentinels' 26379.
	{"writer-svc", "redis", 6379, policyRedis, "the writers store likes on the primary"},
	{"writer-svc", "sentinel", 26379, policyRedis, "the writers ask the Sentinels for the primary"},
	{"fanout-svc", "redis", 6379, policyRedis, "fanout subscribes on the primary"},
	{"fanout-svc", "sentinel", 26379, policyRedis, "fanout asks the Sentinels for the primary"},
	{"redis", "redis", 6379, policyRedis, "a replica syncs from its primary"},
	{"redis", "sentinel", 26379, policyRedis, "a starting data node asks the Sentinels for the primary"},
	{"sentinel", "redis", 6379, policyRedis, "the Sentinels watch every data node"},
	{"sentinel", "sentinel", 26379, policyRedis, "the Sentinels talk to one another"},
	{"redis-monitor", "redis", 6379, policyRedis, "the opt-in monitor label reaches the data nodes"},
	{"redis-monitor", "sentinel", 26379, policyRedis, "the opt-in monitor label reaches the Sentinels"},
	{"debug", "redis", 6379, "", "an unlabelled pod of the namespace"},
	{"debug", "sentinel", 26379, "", "an unlabelled pod of the namespace"},
	{"likes-credentials", "redis", 6379, "", "the credentials Job makes a Secret, it talks to no Redis"},
	{"bench", "redis", 6379, "", "the bench label is for HTTP, not Redis"},
	{"ingress-controller", "redis", 6379, "", "the Ingress controller has no business with Redis"},
	{"prometheus", "sentinel", 26379, "", "the monitoring namespace scrapes HTTP only"},
	{"impostor", "redis", 6379, "", "a writer's and the monitor's labels in another namespace"},
	{"writer-svc", "redis", 26379, "", "a data node opens 6379 only, not the Sentinels' port"},
	{"writer-svc", "sentinel", 6379, "", "a Sentinel opens 26379 only"},
	{"writer-svc", "redis", 16379, "", "no other port"},

	// http-from-ingress: writer-svc:8080 and fanout-svc:8090 from the controller and the bench label.
	{"ingress-controller", "writer-svc", 8080, policyHTTP, "the Ingress routes likes"},
	{"ingress-controller", "fanout-svc", 8090, policyHTTP, "the Ingress routes streams"},
	{"bench", "writer-svc", 8080, policyHTTP, "loadgen's ramp posts likes to writer-svc:8080"},
	{"bench", "fanout-svc", 8090, policyHTTP, "loadgen's ramp opens streams on every fanout-svc-pods:8090"},
	{"stranger", "writer-svc", 8080, "", "a pod of another namespace"},
	{"stranger", "fanout-svc", 8090, "", "a pod of another namespace"},
	{"debug", "writer-svc", 8080, "", "an unlabelled pod of the namespace"},
	{"impostor", "fanout-svc", 8090, "", "the bench label in another namespace"},
	{"fanout-svc", "writer-svc", 8080, "", "fanout never calls the writers"},
	{"writer-svc", "fanout-svc", 8090, "", "the writers never call fanout"},
	{"redis-monitor", "writer-svc", 8080, "", "the Redis monitor label is for Redis only"},
	{"ingress-controller", "writer-svc", 8090, "", "a writer opens its http port only"},
	{"ingress-controller", "fanout-svc", 8080, "", "a fanout node opens its http port only"},

	// metrics-from-monitoring: the same http port, for the scrapers.
	{"prometheus", "writer-svc", 8080, policyMetrics, "the monitoring namespace scrapes the writers"},
	{"prometheus", "fanout-svc", 8090, policyMetrics, "the monitoring namespace scrapes the fanout nodes"},
	{"scraper", "fanout-svc", 8090, policyMetrics, "a Prometheus of the namespace with the opt-in label"},
	{"scraper", "redis", 6379, "", "the scraper label does not reach Redis"},
	{"impostor", "writer-svc", 8080, "", "the scraper label in another namespace"},
	{"prometheus", "fanout-svc", 9090, "", "no other port"},

	// default-deny-ingress: whatever no policy admits.
	{"ingress-controller", "likes-credentials", 8080, "", "the credentials Job serves nothing"},
	{"debug", "likes-credentials", 8080, "", "the credentials Job serves nothing"},
	{"ingress-controller", "newcomer", 8080, "", "a workload no policy lists"},
	{"debug", "newcomer", 8080, "", "a workload no policy lists, from its own namespace"},
}

// checkNetCases evaluates every case in w.
func checkNetCases(t *testing.T, w *netWorld, cases []netCase) {
	t.Helper()
	for _, c := range cases {
		from, to := w.pod(t, c.from), w.pod(t, c.to)
		v, err := evalIngress(w.policies, from, to, corev1.ProtocolTCP, c.port)
		if err != nil {
			t.Errorf("%s -> %s:%d: %v", c.from, c.to, c.port, err)
			continue
		}
		switch {
		case c.by == "" && v.allowed():
			t.Errorf("%s (%s/%v) -> %s:%d is admitted by %v; want it refused: %s", c.from, from.namespace, from.labels, c.to, c.port, v.by, c.why)
		case c.by != "" && !slices.Equal(v.by, []string{c.by}):
			t.Errorf("%s (%s/%v) -> %s:%d is admitted by %v (isolated %v); want by %s alone: %s", c.from, from.namespace, from.labels, c.to, c.port, v.by, v.isolated, c.by, c.why)
		}
	}
}

// TestNetworkPolicyPaths evaluates the base's policies, with the pod templates' real labels, on
// one connection after another: each policy admits what its header says and refuses the rest.
func TestNetworkPolicyPaths(t *testing.T) {
	objs := loadKube(t)
	w := newNetWorld(t, objs, readKustomization(t).Namespace)
	for _, name := range []string{policyDefaultDeny, policyRedis, policyHTTP, policyMetrics} {
		if objs.policies[name] == nil {
			t.Errorf("no NetworkPolicy %s", name)
		}
	}
	checkNetCases(t, w, netCases)
	// Every policy has its cases: one it admits (unless it admits nothing) and one refused on a
	// pod it selects, so that a policy added later comes with its own.
	for _, p := range w.policies {
		var admits, refuses bool
		for _, c := range netCases {
			admits = admits || c.by == p.Name
			if sel, err := policySelects(p, w.pod(t, c.to)); err == nil && sel && c.by == "" {
				refuses = true
			}
		}
		if (!admits && len(p.Spec.Ingress) > 0) || !refuses {
			t.Errorf("NetworkPolicy %s: netCases hold a connection it admits %v, one it refuses %v; want both", p.Name, admits, refuses)
		}
	}
}

// TestNetworkPoliciesCoverWorkloads: every pod of the base is isolated (selected for ingress by
// a policy: nothing left open by accident), the default deny selects every pod, every port a
// container declares is opened by some policy (nothing closed by accident), every named port a
// policy opens resolves on a pod it selects, and every policy is ingress only.
func TestNetworkPoliciesCoverWorkloads(t *testing.T) {
	objs := loadKube(t)
	w := newNetWorld(t, objs, readKustomization(t).Namespace)
	for _, want := range []string{"writer-svc", "fanout-svc", kubeRedis, kubeSentinel, "likes-credentials"} {
		if !slices.Contains(w.workloads, want) {
			t.Errorf("no workload %s in the base (workloads %v)", want, w.workloads)
		}
	}
	deny := objs.policies[policyDefaultDeny]
	if deny == nil || len(deny.Spec.PodSelector.MatchLabels)+len(deny.Spec.PodSelector.MatchExpressions) != 0 || len(deny.Spec.Ingress) != 0 ||
		!slices.Equal(deny.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("NetworkPolicy %s %+v; want podSelector {}, policyTypes [Ingress], no ingress rule", policyDefaultDeny, deny)
	}
	for _, name := range append(slices.Clone(w.workloads), "newcomer", "debug") {
		pod := w.pod(t, name)
		var selectedBy []string
		for _, p := range w.policies {
			if sel, err := policySelects(p, pod); err != nil {
				t.Fatal(err)
			} else if sel {
				selectedBy = append(selectedBy, p.Name)
			}
		}
		if !slices.Contains(selectedBy, policyDefaultDeny) {
			t.Errorf("pod %s (%v) is selected by %v; want the default deny among them", name, pod.labels, selectedBy)
		}
		if name == "newcomer" || name == "debug" {
			continue
		}
		for _, cp := range pod.ports {
			if !portOpened(t, w.policies, pod, cp) {
				t.Errorf("%s's container port %s (%d) is opened by no NetworkPolicy; it would refuse every connection", name, cp.Name, cp.ContainerPort)
			}
		}
	}
	for _, p := range w.policies {
		if !slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(p.Spec.Egress) != 0 {
			t.Errorf("NetworkPolicy %s policyTypes %v, %d egress rules; want [Ingress] and none (an egress policy must first admit DNS)", p.Name, p.Spec.PolicyTypes, len(p.Spec.Egress))
		}
		if p.Labels["app.kubernetes.io/part-of"] != "likes" {
			t.Errorf("NetworkPolicy %s labels %v; want app.kubernetes.io/part-of: likes", p.Name, p.Labels)
		}
		for _, rule := range p.Spec.Ingress {
			for _, port := range rule.Ports {
				if port.Port == nil || port.Port.StrVal == "" {
					continue
				}
				if !slices.ContainsFunc(w.workloads, func(name string) bool {
					pod := w.pod(t, name)
					sel, err := policySelects(p, pod)
					return err == nil && sel && slices.ContainsFunc(pod.ports, func(cp corev1.ContainerPort) bool { return cp.Name == port.Port.StrVal })
				}) {
					t.Errorf("NetworkPolicy %s opens port %q, which no pod it selects names", p.Name, port.Port.StrVal)
				}
			}
		}
	}
}

// portOpened reports whether a rule of a policy selecting pod opens its container port cp to
// some source.
func portOpened(t *testing.T, policies []*networkingv1.NetworkPolicy, pod netPod, cp corev1.ContainerPort) bool {
	t.Helper()
	for _, p := range policies {
		if sel, err := policySelects(p, pod); err != nil || !sel {
			continue
		}
		for _, rule := range p.Spec.Ingress {
			if len(rule.Ports) == 0 {
				return true
			}
			for _, port := range rule.Ports {
				if ok, err := portMatches(port, pod, containerProtocol(cp), cp.ContainerPort); err != nil {
					t.Errorf("NetworkPolicy %s: %v", p.Name, err)
				} else if ok {
					return true
				}
			}
		}
	}
	return false
}

// TestMetricsShareThePublicPort holds the premise of networkpolicy-metrics.yaml: Prometheus
// scrapes writer-svc and fanout-svc on their one http port, the port the Ingress controller is
// admitted to as well, and no Ingress routes /metrics. If /metrics moves to a port of its own,
// this fails: give that port to metrics-from-monitoring alone.
func TestMetricsShareThePublicPort(t *testing.T) {
	objs := loadKube(t)
	for _, name := range []string{"writer-svc", "fanout-svc"} {
		tmpl := objs.deployments[name].Spec.Template
		c := tmpl.Spec.Containers[0]
		if len(c.Ports) != 1 || c.Ports[0].Name != "http" {
			t.Errorf("%s container ports %v; want the one named http", name, c.Ports)
			continue
		}
		if got, want := tmpl.Annotations["prometheus.io/port"], fmt.Sprint(c.Ports[0].ContainerPort); got != want || tmpl.Annotations["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s scraped on port %q path %q; want the http port %s, /metrics", name, got, tmpl.Annotations["prometheus.io/path"], want)
		}
	}
	var ings []*networkingv1.Ingress
	for _, ing := range objs.ingresses {
		ings = append(ings, ing)
	}
	for _, host := range routestest.IngressHosts(ings) {
		for _, path := range []string{"/metrics", "/metrics/x"} {
			if got, err := routestest.IngressRoute(ings, host, path); err != nil || got != "" {
				t.Errorf("Ingress host %q routes %s to %q (%v); the metrics policy relies on the Ingresses routing no /metrics", host, path, got, err)
			}
		}
	}
}

// TestNetworkPolicyEvaluator holds the evaluator to NetworkPolicy's semantics on small policies,
// so that the tests above, which trust it, do not pass by a bug of its own.
func TestNetworkPolicyEvaluator(t *testing.T) {
	ns := func(name string) labels.Set { return namespaceLabels(name, map[string]string{"team": name + "-team"}) }
	web := netPod{name: "web", namespace: "a", nsLabels: ns("a"), labels: labels.Set{"app": "web", "tier": "front"},
		ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}
	client := netPod{name: "client", namespace: "a", nsLabels: ns("a"), labels: labels.Set{"app": "client"}}
	bare := netPod{name: "bare", namespace: "a", nsLabels: ns("a"), labels: labels.Set{}}
	remote := netPod{name: "remote", namespace: "b", nsLabels: ns("b"), labels: labels.Set{"app": "client"}}
	tests := []struct {
		name     string
		policies []string // YAML specs, each of a NetworkPolicy in namespace a
		from     netPod
		proto    corev1.Protocol
		port     int32
		allowed  bool
		isolated bool
	}{
		{"no policy: not isolated", nil, remote, "TCP", 8080, true, false},
		{"a policy of another namespace", []string{"metadata: {name: p, namespace: b}\nspec: {podSelector: {}}"}, remote, "TCP", 8080, true, false},
		{"podSelector not matching the target", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {matchLabels: {app: db}}}"}, remote, "TCP", 8080, true, false},
		{"deny all: podSelector {}, no rules", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}}"}, client, "TCP", 8080, false, true},
		{"Egress only does not isolate ingress", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, policyTypes: [Egress]}"}, client, "TCP", 8080, true, false},
		{"an empty rule admits everything", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{}]}"}, remote, "UDP", 53, true, true},
		{"ports only: any source, that port", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: 8080}]}]}"}, remote, "TCP", 8080, true, true},
		{"ports only: another port", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: 8080}]}]}"}, remote, "TCP", 8081, false, true},
		{"the protocol defaults to TCP", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: 53}]}]}"}, remote, "UDP", 53, false, true},
		{"a UDP port", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: 53, protocol: UDP}]}]}"}, remote, "UDP", 53, true, true},
		{"endPort: inside the range", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: 8000, endPort: 8100}]}]}"}, remote, "TCP", 8080, true, true},
		{"endPort: past the range", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: 8000, endPort: 8079}]}]}"}, remote, "TCP", 8080, false, true},
		{"a named port resolves on the target", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: http}]}]}"}, remote, "TCP", 8080, true, true},
		{"a named port is that port alone", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: http}]}]}"}, remote, "TCP", 53, false, true},
		{"a named port of another protocol", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{ports: [{port: dns}]}]}"}, remote, "TCP", 53, false, true},
		{"podSelector peer: same namespace", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]}"}, client, "TCP", 8080, true, true},
		{"podSelector peer: not another namespace", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]}"}, remote, "TCP", 8080, false, true},
		{"podSelector {} peer: every pod of the namespace", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {}}]}]}"}, bare, "TCP", 8080, true, true},
		{"namespaceSelector peer: every pod there", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {team: b-team}}}]}]}"}, remote, "TCP", 8080, true, true},
		{"namespaceSelector by metadata.name", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: b}}}]}]}"}, remote, "TCP", 8080, true, true},
		{"namespaceSelector peer: not this namespace", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {team: b-team}}}]}]}"}, client, "TCP", 8080, false, true},
		{"namespaceSelector {}: every namespace", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {}}]}]}"}, remote, "TCP", 8080, true, true},
		{"one peer with both selectors: AND", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {team: b-team}}, podSelector: {matchLabels: {app: other}}}]}]}"}, remote, "TCP", 8080, false, true},
		{"two peers: OR", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {team: c-team}}}, {podSelector: {matchLabels: {app: client}}}]}]}"}, client, "TCP", 8080, true, true},
		{"from and ports: both must match", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {}}], ports: [{port: 9090}]}]}"}, client, "TCP", 8080, false, true},
		{"matchExpressions In on the target", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {matchExpressions: [{key: app, operator: In, values: [web, api]}]}}"}, client, "TCP", 8080, false, true},
		{"matchExpressions NotIn on the target", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {matchExpressions: [{key: app, operator: NotIn, values: [web]}]}}"}, client, "TCP", 8080, true, false},
		{"matchExpressions Exists on the peer", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {matchExpressions: [{key: app, operator: Exists}]}}]}]}"}, bare, "TCP", 8080, false, true},
		{"matchExpressions DoesNotExist on the peer", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {matchExpressions: [{key: app, operator: DoesNotExist}]}}]}]}"}, bare, "TCP", 8080, true, true},
		{"matchLabels and matchExpressions: AND", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [back]}]}}"}, client, "TCP", 8080, true, false},
		{"policies add up: a deny and an allow", []string{
			"metadata: {name: deny, namespace: a}\nspec: {podSelector: {}}",
			"metadata: {name: allow, namespace: a}\nspec: {podSelector: {matchLabels: {app: web}}, ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]}",
		}, client, "TCP", 8080, true, true},
		{"policies add up: neither admits", []string{
			"metadata: {name: deny, namespace: a}\nspec: {podSelector: {}}",
			"metadata: {name: allow, namespace: a}\nspec: {podSelector: {matchLabels: {app: web}}, ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]}",
		}, bare, "TCP", 8080, false, true},
		{"policyTypes empty with rules: Ingress", []string{"metadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {matchLabels: {app: nobody}}}]}]}"}, client, "TCP", 8080, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var policies []*networkingv1.NetworkPolicy
			for _, spec := range tt.policies {
				obj, err := decodeManifest([]byte("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n" + spec))
				if err != nil {
					t.Fatalf("decode %q: %v", spec, err)
				}
				policies = append(policies, obj.(*networkingv1.NetworkPolicy))
			}
			v, err := evalIngress(policies, tt.from, web, tt.proto, tt.port)
			if err != nil {
				t.Fatal(err)
			}
			if v.allowed() != tt.allowed || v.isolated != tt.isolated {
				t.Errorf("allowed %v isolated %v (by %v); want allowed %v isolated %v", v.allowed(), v.isolated, v.by, tt.allowed, tt.isolated)
			}
		})
	}
	obj, err := decodeManifest([]byte("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: a}\nspec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8}}]}]}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evalIngress([]*networkingv1.NetworkPolicy{obj.(*networkingv1.NetworkPolicy)}, client, web, "TCP", 8080); err == nil {
		t.Error("an ipBlock peer was evaluated; want an error: the evaluator does not model addresses")
	}
}

// kustomizeRender renders the kustomization in dir with kubectl's Kustomize into typed objects;
// without kubectl the test skips (TestNetworkPolicyPaths checks the base's files themselves).
func kustomizeRender(t *testing.T, dir string) *kubeObjects {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH: the rendered policies are not checked (TestNetworkPolicyPaths checks the files)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	objs := &kubeObjects{
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		ingresses: map[string]*networkingv1.Ingress{}, namespaces: map[string]*corev1.Namespace{},
		policies: map[string]*networkingv1.NetworkPolicy{}, jobs: map[string]*batchv1.Job{},
		accounts: map[string]*corev1.ServiceAccount{}, roles: map[string]*rbacv1.Role{}, bindings: map[string]*rbacv1.RoleBinding{},
	}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		obj, err := decodeManifest(doc)
		if err != nil {
			t.Fatalf("decode rendered object: %v\n%s", err, doc)
		}
		if err := objs.add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return objs
}

// TestNetworkPoliciesRendered renders deploy/kube, the overlay the kube suite applies, and
// evaluates the same connections on what kubectl would apply: the policies in the namespace,
// the overlay's pod labels. (That cluster's CNI bridge enforces no policy; this is the test.)
func TestNetworkPoliciesRendered(t *testing.T) {
	objs := kustomizeRender(t, filepath.Join(repoRoot, "deploy", "kube"))
	k := readKustomization(t)
	if len(objs.policies) != 4 {
		t.Errorf("deploy/kube renders NetworkPolicies %v; want the base's four", slices.Sorted(maps.Keys(objs.policies)))
	}
	for _, p := range objs.policies {
		if p.Namespace != k.Namespace {
			t.Errorf("NetworkPolicy %s rendered in namespace %q; want %q", p.Name, p.Namespace, k.Namespace)
		}
	}
	checkNetCases(t, newNetWorld(t, objs, k.Namespace), netCases)
}

// TestNetworkPolicyOverlayPatches applies, in an overlay of the base, the patch each header
// gives for choosing another namespace, and finds that namespace admitted and the default no
// longer: the instructions work as written.
func TestNetworkPolicyOverlayPatches(t *testing.T) {
	for _, tt := range []struct {
		file, to  string
		port      int32
		byDefault string // the pod of the default namespace
	}{
		{"networkpolicy-http-ingress.yaml", "writer-svc", 8080, "ingress-controller"},
		{"networkpolicy-metrics.yaml", "fanout-svc", 8090, "prometheus"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(kubeBase, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			patches, namespace := headerPatch(t, string(raw))
			dir := t.TempDir()
			base, err := filepath.Rel(dir, kubeBase)
			if err != nil {
				t.Fatal(err)
			}
			overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + base + "]\n" + patches
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
				t.Fatal(err)
			}
			objs := kustomizeRender(t, dir)
			w := newNetWorld(t, objs, readKustomization(t).Namespace)
			w.pods["moved"] = netPod{name: "moved", namespace: namespace, nsLabels: namespaceLabels(namespace, nil), labels: w.pod(t, tt.byDefault).labels}
			target := patchTarget(t, patches)
			if objs.policies[target] == nil {
				t.Fatalf("the header's patch targets NetworkPolicy %s, which the base lacks", target)
			}
			checkNetCases(t, w, []netCase{
				{"moved", tt.to, tt.port, target, "the namespace the overlay names"},
				{tt.byDefault, tt.to, tt.port, "", "the base's default, which the overlay replaced"},
			})
		})
	}
}

// headerPatch returns the `patches:` example of a policy file's header comment, uncommented, and
// the namespace its kubernetes.io/metadata.name value names.
func headerPatch(t *testing.T, file string) (patches, namespace string) {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(file, "\n") {
		switch {
		case line == "#   patches:":
			lines = append(lines, "patches:")
		case len(lines) > 0 && strings.HasPrefix(line, "#     "):
			lines = append(lines, strings.TrimPrefix(line, "#   "))
		case len(lines) > 0:
			patches = strings.Join(lines, "\n") + "\n"
			m := regexp.MustCompile(`kubernetes\.io/metadata\.name: ([a-z0-9-]+)\}`).FindStringSubmatch(patches)
			if m == nil {
				t.Fatalf("the header's patch names no kubernetes.io/metadata.name:\n%s", patches)
			}
			return patches, m[1]
		}
	}
	t.Fatal("no `#   patches:` example in the header")
	return "", ""
}

// patchTarget returns the NetworkPolicy name a header's patch targets.
func patchTarget(t *testing.T, patches string) string {
	t.Helper()
	m := regexp.MustCompile(`target: \{kind: NetworkPolicy, name: ([a-z0-9-]+)\}`).FindStringSubmatch(patches)
	if m == nil {
		t.Fatalf("the header's patch targets no NetworkPolicy:\n%s", patches)
	}
	return m[1]
}

// TestRampJobOptsIn: the kube suite's ramp Job (deploy/kubetest/ramp_test.go) connects to the
// Sentinels and the primary as the monitor user, to writer-svc:8080 and to every fanout pod's
// 8090 (its /metrics too): with a CNI that enforces the policies it needs the opt-in labels.
func TestRampJobOptsIn(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "kubetest", "ramp_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)const rampJob = `(.*?)`").FindSubmatch(raw)
	if m == nil {
		t.Fatal("deploy/kubetest/ramp_test.go has no const rampJob")
	}
	obj, err := decodeManifest(m[1])
	if err != nil {
		t.Fatalf("rampJob: %v", err)
	}
	job, ok := obj.(*batchv1.Job)
	if !ok {
		t.Fatalf("rampJob is a %T; want a Job", obj)
	}
	if len(job.Spec.Template.Labels) == 0 {
		t.Fatalf("the ramp Job's pod template has no labels: where policies are enforced it needs %v and %v (deploy/base/networkpolicy-*.yaml)", redisClientLabels, benchClientLabels)
	}
	objs := loadKube(t)
	w := newNetWorld(t, objs, readKustomization(t).Namespace)
	if job.Namespace != w.namespace {
		t.Fatalf("the ramp Job runs in namespace %q; want %q", job.Namespace, w.namespace)
	}
	w.pods["ramp"] = netPod{name: "ramp", namespace: job.Namespace, nsLabels: w.pod(t, "debug").nsLabels, labels: job.Spec.Template.Labels}
	checkNetCases(t, w, []netCase{
		{"ramp", kubeSentinel, 26379, policyRedis, "the ramp finds the primary through the Sentinels"},
		{"ramp", kubeRedis, 6379, policyRedis, "the ramp reads NUMSUB and INFO cpu on the primary"},
		{"ramp", "writer-svc", 8080, policyHTTP, "the ramp posts likes and reads the writers' /metrics"},
		{"ramp", "fanout-svc", 8090, policyHTTP, "the ramp opens streams on, and reads /metrics of, every fanout pod"},
	})
}

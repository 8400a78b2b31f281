package helmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// repoRoot is the module root, three levels above this package.
var repoRoot = func() string {
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

// object is one rendered manifest, decoded.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }
func (o object) name() string { s, _ := get(o, "metadata", "name").(string); return s }
func (o object) id() string   { return o.kind() + "/" + o.name() }

// get walks o along keys (map keys, or "0", "1"... into lists); nil where a step is missing.
func get(o any, keys ...string) any {
	for _, k := range keys {
		switch v := o.(type) {
		case map[string]any:
			o = v[k]
		case object:
			o = v[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(v) {
				return nil
			}
			o = v[i]
		default:
			return nil
		}
	}
	return o
}

// helm runs the pinned helm in the repository root and returns its output; err is its exit.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := Binary(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// values is a values file of testdata, by name, as helm's -f argument.
func values(name string) []string {
	return []string{"-f", filepath.Join("deploy", "helm", "helmtest", "testdata", name)}
}

// render is `helm template` of the chart with args (values files, --set), decoded: it fails the
// test on any document that is not a Kubernetes object.
func render(t *testing.T, args ...string) map[string]object {
	t.Helper()
	out, err := helm(t, append([]string{"template", "likes", Chart(repoRoot), "--namespace", "likes"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

// decode splits a YAML stream into objects by kind/name, refusing duplicates and non-objects.
func decode(t *testing.T, stream string) map[string]object {
	t.Helper()
	objs := map[string]object{}
	for _, doc := range strings.Split("\n"+stream, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("a rendered document does not parse: %v\n%s", err, doc)
		}
		if len(o) == 0 {
			continue
		}
		if o.kind() == "" || o.name() == "" || o["apiVersion"] == nil {
			t.Fatalf("a rendered document is not a Kubernetes object:\n%s", doc)
		}
		if _, dup := objs[o.id()]; dup {
			t.Fatalf("%s rendered twice", o.id())
		}
		objs[o.id()] = o
	}
	return objs
}

// ids is the sorted kind/name of every object.
func ids(objs map[string]object) []string {
	var out []string
	for id := range objs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// deploysBase is every object deploy/base deploys but its Namespace (the chart installs into one),
// with the two ConfigMaps its components generate.
var deploysBase = []string{
	"ConfigMap/fanout-svc", "ConfigMap/likes-prometheus-rules", "ConfigMap/likes-redis",
	"ConfigMap/likes-redis-scripts", "ConfigMap/writer-svc",
	"Deployment/fanout-svc", "Deployment/writer-svc",
	"HorizontalPodAutoscaler/fanout-svc",
	"Ingress/likes", "Ingress/likes-streams",
	"Job/likes-credentials",
	"NetworkPolicy/default-deny-ingress", "NetworkPolicy/http-from-ingress",
	"NetworkPolicy/metrics-from-monitoring", "NetworkPolicy/redis-clients",
	"PodDisruptionBudget/fanout-svc", "PodDisruptionBudget/redis", "PodDisruptionBudget/sentinel",
	"PodDisruptionBudget/writer-svc",
	"Role/likes-credentials", "RoleBinding/likes-credentials", "ServiceAccount/likes-credentials",
	"Service/fanout-svc", "Service/fanout-svc-pods", "Service/redis", "Service/sentinel", "Service/writer-svc",
	"StatefulSet/redis", "StatefulSet/sentinel",
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{nil, values("all-on.yaml"), values("external-redis.yaml")} {
		if out, err := helm(t, append([]string{"lint", "--strict", Chart(repoRoot)}, args...)...); err != nil {
			t.Errorf("helm lint --strict %v: %v\n%s", args, err, out)
		}
	}
}

// The default values render exactly deploy/base's objects, and nothing optional.
func TestDefaultsRenderTheBase(t *testing.T) {
	want := slices.Sorted(slices.Values(deploysBase))
	if got := ids(render(t)); !slices.Equal(got, want) {
		t.Errorf("rendered %v\nwant %v", got, want)
	}
}

// Every optional part on: the writers' HPA, the generated session key, the ServiceMonitor and the
// PrometheusRule, on top of the base.
func TestAllOn(t *testing.T) {
	objs := render(t, values("all-on.yaml")...)
	want := slices.Concat(deploysBase, []string{"HorizontalPodAutoscaler/writer-svc", "PrometheusRule/likes",
		"Secret/likes-session", "ServiceMonitor/likes"})
	slices.Sort(want)
	if got := ids(objs); !slices.Equal(got, want) {
		t.Errorf("rendered %v\nwant %v", got, want)
	}
	// With an HPA, the Deployment leaves its replicas to it (an upgrade must not reset them).
	if r := get(objs["Deployment/writer-svc"], "spec", "replicas"); r != nil {
		t.Errorf("writer-svc has replicas %v beside its HPA", r)
	}
	if got := get(objs["ServiceMonitor/likes"], "spec", "selector", "matchLabels", "likes.io/metrics"); got != "true" {
		t.Errorf("the ServiceMonitor selects %v", get(objs["ServiceMonitor/likes"], "spec", "selector"))
	}
	// The Services it selects are the two the alerts name as jobs, not the headless twin.
	for _, id := range []string{"Service/writer-svc", "Service/fanout-svc", "Service/fanout-svc-pods"} {
		labelled := get(objs[id], "metadata", "labels", "likes.io/metrics") == "true"
		if labelled != (id != "Service/fanout-svc-pods") {
			t.Errorf("%s: likes.io/metrics label %v", id, labelled)
		}
	}
	groups, _ := get(objs["PrometheusRule/likes"], "spec", "groups").([]any)
	if len(groups) < 2 {
		t.Errorf("the PrometheusRule has %d groups; want the recording and the alerting ones", len(groups))
	}
	env := containerEnv(objs["Deployment/writer-svc"])
	if ref := get(env["AUTH_SESSION_SECRET"], "valueFrom", "secretKeyRef", "name"); ref != "likes-session" {
		t.Errorf("AUTH_SESSION_SECRET from %v; want the Secret likes-session", ref)
	}
	if env["SESSION_KEY_FILE"] != nil || slices.Contains(secretItems(objs["Deployment/writer-svc"]), "session.key") {
		t.Errorf("SESSION_KEY_FILE %v beside the generated static key, which it would override", env["SESSION_KEY_FILE"])
	}
	if get(objs["Secret/likes-session"], "metadata", "annotations", "helm.sh/resource-policy") != "keep" {
		t.Error("the generated session key is not kept across an uninstall")
	}
	// fanout.sysctls lands in the fanout pods' securityContext, beside the restricted settings,
	// and in no other workload's.
	fanoutSecurity := get(objs["Deployment/fanout-svc"], "spec", "template", "spec", "securityContext")
	if got := fmt.Sprint(get(fanoutSecurity, "sysctls")); got != "[map[name:net.core.somaxconn value:16384]]" {
		t.Errorf("fanout-svc's sysctls %s; want net.core.somaxconn 16384 from fanout.sysctls", got)
	}
	if v, _ := get(fanoutSecurity, "sysctls", "0", "value").(string); v != "16384" {
		t.Errorf("fanout-svc's sysctl value %#v; want the string the Pod's API takes", get(fanoutSecurity, "sysctls", "0", "value"))
	}
	if get(fanoutSecurity, "runAsNonRoot") != true {
		t.Errorf("fanout-svc's securityContext %v lost runAsNonRoot beside its sysctls", fanoutSecurity)
	}
	for _, id := range []string{"Deployment/writer-svc", "StatefulSet/redis", "StatefulSet/sentinel"} {
		if s := get(objs[id], "spec", "template", "spec", "securityContext", "sysctls"); s != nil {
			t.Errorf("%s has sysctls %v; fanout.sysctls is fanout's alone", id, s)
		}
	}
	for _, o := range []string{"Ingress/likes", "Ingress/likes-streams"} {
		if c := get(objs[o], "spec", "ingressClassName"); c != "nginx" {
			t.Errorf("%s: class %v; want the value's nginx", o, c)
		}
		rules, _ := get(objs[o], "spec", "rules").([]any)
		if len(rules) != 2 {
			t.Errorf("%s: %d rules; want one per host", o, len(rules))
		}
	}
}

// A Redis of one's own: no StatefulSet, no Redis policy, the URL in likes-redis, no WAIT for a
// replica; the credentials and the session key from existing Secrets, and no Job.
func TestExternalRedis(t *testing.T) {
	objs := render(t, values("external-redis.yaml")...)
	for _, id := range []string{"StatefulSet/redis", "StatefulSet/sentinel", "Service/redis", "ConfigMap/likes-redis-scripts",
		"NetworkPolicy/redis-clients", "Job/likes-credentials", "Role/likes-credentials"} {
		if _, ok := objs[id]; ok {
			t.Errorf("%s rendered with an external Redis and existing credentials", id)
		}
	}
	data, _ := get(objs["ConfigMap/likes-redis"], "data").(map[string]any)
	if data["REDIS_URL"] != "rediss://redis.example.internal:6380/0" || data["REDIS_SENTINEL_ADDRS"] != nil {
		t.Errorf("likes-redis: %v", data)
	}
	if got := get(objs["ConfigMap/writer-svc"], "data", "REDIS_ACK_REPLICAS"); got != "0" {
		t.Errorf("REDIS_ACK_REPLICAS %v; want 0 with no replica", got)
	}
	for _, d := range []string{"Deployment/writer-svc", "Deployment/fanout-svc"} {
		if s := get(objs[d], "spec", "template", "spec", "volumes", "0", "secret", "secretName"); s != "my-redis-credentials" {
			t.Errorf("%s mounts %v; want the existing Secret", d, s)
		}
	}
	env := containerEnv(objs["Deployment/writer-svc"])
	if ref := get(env["AUTH_SESSION_SECRET"], "valueFrom", "secretKeyRef"); fmt.Sprint(ref) != "map[key:key name:my-session]" {
		t.Errorf("AUTH_SESSION_SECRET from %v", ref)
	}
}

// The schema refuses values the templates cannot mean, before rendering anything.
func TestSchemaRefuses(t *testing.T) {
	for _, set := range [][]string{
		{"--set", "redis.mode=cluster"},
		{"--set", "writer.replicas=0"},
		{"--set", "replicas=3"},
		{"--set", "fanout.config.max-conns=1"},
		{"--set", "redis.data.appendfsync=sometimes"},
		{"--set-json", `ingress.writerPaths=[{"path":"like","pathType":"Prefix"}]`},
		{"--set-json", `fanout.sysctls=[{"name":"net.core.somaxconn"}]`},
		{"--set-json", `fanout.sysctls=[{"name":"somaxconn","value":"16384"}]`},
	} {
		out, err := helm(t, append([]string{"template", "likes", Chart(repoRoot)}, set...)...)
		if err == nil || !strings.Contains(out, "don't meet the specifications of the schema") {
			t.Errorf("%v: %v, not refused by the schema:\n%.400s", set, err, out)
		}
	}
}

// By default the writers sign sessions with the credentials Secret's session.key, mounted for
// them alone, and no static key: never with keys in Redis. Benchmark sessions stay off.
func TestSessionKeyFromTheCredentials(t *testing.T) {
	objs := render(t)
	env := containerEnv(objs["Deployment/writer-svc"])
	if v := get(env["SESSION_KEY_FILE"], "value"); v != "/credentials/session.key" {
		t.Errorf("writer-svc SESSION_KEY_FILE %v; want /credentials/session.key", v)
	}
	if env["AUTH_SESSION_SECRET"] != nil || env["BENCH_SESSION_KEY_FILE"] != nil {
		t.Errorf("writer-svc gets AUTH_SESSION_SECRET %v, BENCH_SESSION_KEY_FILE %v; want neither by default",
			env["AUTH_SESSION_SECRET"], env["BENCH_SESSION_KEY_FILE"])
	}
	if items := secretItems(objs["Deployment/writer-svc"]); !slices.Contains(items, "session.key") {
		t.Errorf("writer-svc mounts %v of the credentials; want session.key among them", items)
	}
	for _, id := range []string{"Deployment/fanout-svc", "StatefulSet/redis", "StatefulSet/sentinel"} {
		if slices.Contains(secretItems(objs[id]), "session.key") {
			t.Errorf("%s mounts the session signing keys", id)
		}
	}
	verbs := fmt.Sprint(get(objs["Role/likes-credentials"], "rules", "0"))
	if !strings.Contains(verbs, "patch") || !strings.Contains(verbs, "likes-redis-credentials") {
		t.Errorf("the credentials Role's first rule %s; want patch of its own Secret (to add session.key to an old one)", verbs)
	}
}

// secretItems are the keys a workload mounts of Secrets, by their key.
func secretItems(o object) []string {
	var keys []string
	vols, _ := get(o, "spec", "template", "spec", "volumes").([]any)
	for _, v := range vols {
		items, _ := get(v, "secret", "items").([]any)
		for _, it := range items {
			if k, ok := get(it, "key").(string); ok {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// containerEnv is a workload's first container's env, by name.
func containerEnv(o object) map[string]any {
	env := map[string]any{}
	list, _ := get(o, "spec", "template", "spec", "containers", "0", "env").([]any)
	for _, e := range list {
		if n, ok := get(e, "name").(string); ok {
			env[n] = e
		}
	}
	return env
}

// The generated ConfigMaps hold the repository's own files byte for byte: the Redis script
// docker-compose.yml runs, and the rules the Compose Prometheus loads (files/ links to them).
func TestFilesAreTheRepositorys(t *testing.T) {
	objs := render(t)
	for id, files := range map[string][]string{
		"ConfigMap/likes-redis-scripts":    {"deploy/redis/likes-redis.sh"},
		"ConfigMap/likes-prometheus-rules": {"deploy/monitoring/recording.yml", "deploy/monitoring/alerts.yml"},
	} {
		for _, f := range files {
			want, err := os.ReadFile(filepath.Join(repoRoot, f))
			if err != nil {
				t.Fatal(err)
			}
			if got := get(objs[id], "data", filepath.Base(f)); got != string(want) {
				t.Errorf("%s's %s is not %s", id, filepath.Base(f), f)
			}
		}
	}
}

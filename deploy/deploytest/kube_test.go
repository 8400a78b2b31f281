package deploytest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

var kubeBase = filepath.Join(repoRoot, "deploy", "base")

// kubeDecoder decodes the API groups the base uses, strictly: an unknown or duplicate field is an
// error, as `kubectl apply --validate=strict` would make it.
var kubeDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, batchv1.AddToScheme, rbacv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// kustomization is the part of kustomization.yaml the base uses; unknown fields fail the test.
type kustomization struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Namespace  string           `json:"namespace"`
	Resources  []string         `json:"resources"`
	Components []string         `json:"components"`
	Images     []kustomizeImage `json:"images"`
}

// kustomizeImage lets an overlay replace an image's name or tag.
type kustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
}

func readKustomization(t *testing.T) kustomization {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(kubeBase, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	return k
}

// kubeObjects is every object of the base, decoded into its Go type.
type kubeObjects struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	pdbs         map[string]*policyv1.PodDisruptionBudget
	hpas         map[string]*autoscalingv2.HorizontalPodAutoscaler
	ingresses    map[string]*networkingv1.Ingress
	namespaces   map[string]*corev1.Namespace
	policies     map[string]*networkingv1.NetworkPolicy
	jobs         map[string]*batchv1.Job
	accounts     map[string]*corev1.ServiceAccount
	roles        map[string]*rbacv1.Role
	bindings     map[string]*rbacv1.RoleBinding
}

// decodeManifest decodes one YAML document into a typed object.
func decodeManifest(data []byte) (runtime.Object, error) {
	obj, _, err := kubeDecoder.Decode(data, nil, nil)
	return obj, err
}

// loadKube decodes every resource that kustomization.yaml lists, one object per file.
func loadKube(t *testing.T) *kubeObjects {
	t.Helper()
	objs := &kubeObjects{
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		services:   map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, ingresses: map[string]*networkingv1.Ingress{},
		namespaces: map[string]*corev1.Namespace{}, policies: map[string]*networkingv1.NetworkPolicy{},
		jobs: map[string]*batchv1.Job{}, accounts: map[string]*corev1.ServiceAccount{},
		roles: map[string]*rbacv1.Role{}, bindings: map[string]*rbacv1.RoleBinding{},
	}
	for _, name := range readKustomization(t).Resources {
		raw, err := os.ReadFile(filepath.Join(kubeBase, name))
		if err != nil {
			t.Fatalf("kustomization resource: %v", err)
		}
		if bytes.Contains(raw, []byte("\n---")) {
			t.Fatalf("%s holds several documents; keep one object per file", name)
		}
		obj, err := decodeManifest(raw)
		if err != nil {
			t.Fatalf("decode %s: %v", name, err)
		}
		if err := objs.add(obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return objs
}

func (o *kubeObjects) add(obj runtime.Object) error {
	switch v := obj.(type) {
	case *appsv1.Deployment:
		o.deployments[v.Name] = v
	case *appsv1.StatefulSet:
		o.statefulSets[v.Name] = v
	case *corev1.Service:
		o.services[v.Name] = v
	case *corev1.ConfigMap:
		o.configMaps[v.Name] = v
	case *policyv1.PodDisruptionBudget:
		o.pdbs[v.Name] = v
	case *autoscalingv2.HorizontalPodAutoscaler:
		o.hpas[v.Name] = v
	case *networkingv1.Ingress:
		o.ingresses[v.Name] = v
	case *corev1.Namespace:
		o.namespaces[v.Name] = v
	case *networkingv1.NetworkPolicy:
		o.policies[v.Name] = v
	case *batchv1.Job:
		o.jobs[v.Name] = v
	case *corev1.ServiceAccount:
		o.accounts[v.Name] = v
	case *rbacv1.Role:
		o.roles[v.Name] = v
	case *rbacv1.RoleBinding:
		o.bindings[v.Name] = v
	default:
		return fmt.Errorf("unexpected kind %T", obj)
	}
	return nil
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	k := readKustomization(t)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s; want kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	files, err := filepath.Glob(filepath.Join(kubeBase, "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifests []string
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			manifests = append(manifests, base)
		}
	}
	listed := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(listed, manifests) {
		t.Errorf("kustomization resources %v; want every manifest in deploy/base: %v", listed, manifests)
	}
	if len(slices.Compact(listed)) != len(k.Resources) {
		t.Errorf("kustomization lists a resource twice: %v", k.Resources)
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	objs := loadKube(t)
	for kind, n := range map[string]int{
		"Deployment": len(objs.deployments), "StatefulSet": len(objs.statefulSets), "Service": len(objs.services),
		"PodDisruptionBudget": len(objs.pdbs), "HorizontalPodAutoscaler": len(objs.hpas),
	} {
		if n == 0 {
			t.Errorf("the base has no %s", kind)
		}
	}
	if _, ok := objs.namespaces[readKustomization(t).Namespace]; !ok {
		t.Errorf("kustomization namespace %q has no Namespace object", readKustomization(t).Namespace)
	}
}

// TestStrictDecodingRejectsTypos proves the decoder would catch a misspelt field.
func TestStrictDecodingRejectsTypos(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(kubeBase, "fanout-svc-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeManifest(raw); err != nil {
		t.Fatalf("decode the real file: %v", err)
	}
	tests := []struct{ name, from, to string }{
		{"unknown field", "terminationGracePeriodSeconds:", "terminationGracePeriod:"},
		{"wrong type", "replicas: 2", "replicas: two"},
	}
	for _, tt := range tests {
		bad := bytes.Replace(raw, []byte(tt.from), []byte(tt.to), 1)
		if bytes.Equal(bad, raw) {
			t.Fatalf("%s: %q not found in the manifest", tt.name, tt.from)
		}
		if _, err := decodeManifest(bad); err == nil {
			t.Errorf("%s: decoding %q succeeded; want an error", tt.name, tt.to)
		}
	}
}

// TestDeploymentsWiring checks each Deployment against its program, Service, PDB and config.
func TestDeploymentsWiring(t *testing.T) {
	objs := loadKube(t)
	k := readKustomization(t)
	for _, name := range []string{"writer-svc", "fanout-svc"} {
		t.Run(name, func(t *testing.T) {
			d := objs.deployments[name]
			if d == nil {
				t.Fatalf("no Deployment %s", name)
			}
			podLabels := labels.Set(d.Spec.Template.Labels)
			sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(podLabels) {
				t.Errorf("selector %v does not select the pod labels %v (err %v)", d.Spec.Selector, podLabels, err)
			}
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("%d containers; want 1", len(d.Spec.Template.Spec.Containers))
			}
			c := d.Spec.Template.Spec.Containers[0]
			env := containerEnv(t, objs, c)
			checkContainer(t, c, env, k)
			read := programEnv(t, name)
			for v := range env {
				if !read[v] {
					t.Errorf("%s gets %s, which the binary does not read", name, v)
				}
			}
			checkSelects(t, "Service "+name, objs.services[name].Spec.Selector, podLabels)
			for _, p := range objs.services[name].Spec.Ports {
				if p.TargetPort.StrVal == "" || !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.StrVal }) {
					t.Errorf("Service %s targetPort %v is not a named container port", name, p.TargetPort.String())
				}
			}
			pdb := objs.pdbs[name]
			if pdb == nil {
				t.Fatalf("no PodDisruptionBudget %s", name)
			}
			checkSelects(t, "PDB "+name, pdb.Spec.Selector.MatchLabels, podLabels)
		})
	}
}

// containerEnv returns the environment a container gets: its ConfigMaps' keys and env entries,
// a ConfigMap key by its value, a pod field as "$(field:PATH)", a Secret's key as "".
func containerEnv(t *testing.T, objs *kubeObjects, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Errorf("envFrom %v: only ConfigMaps are expected", from)
			continue
		}
		cm := objs.configMaps[from.ConfigMapRef.Name]
		if cm == nil {
			t.Errorf("envFrom names ConfigMap %s, which the base lacks", from.ConfigMapRef.Name)
			continue
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		env[e.Name] = envValue(t, objs, e)
	}
	return env
}

// envValue returns the value of one env entry (see containerEnv).
func envValue(t *testing.T, objs *kubeObjects, e corev1.EnvVar) string {
	t.Helper()
	switch from := e.ValueFrom; {
	case from == nil:
		return e.Value
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm := objs.configMaps[ref.Name]
		if cm == nil {
			t.Errorf("env %s names ConfigMap %s, which the base lacks", e.Name, ref.Name)
			return ""
		}
		v, ok := cm.Data[ref.Key]
		if !ok && (ref.Optional == nil || !*ref.Optional) {
			t.Errorf("env %s names key %s of ConfigMap %s, which it lacks", e.Name, ref.Key, ref.Name)
		}
		return v
	case from.FieldRef != nil:
		return "$(field:" + from.FieldRef.FieldPath + ")"
	}
	return ""
}

func checkContainer(t *testing.T, c corev1.Container, env map[string]string, k kustomization) {
	t.Helper()
	_, port, err := net.SplitHostPort(env["LISTEN_ADDR"])
	if err != nil {
		t.Fatalf("LISTEN_ADDR %q: %v", env["LISTEN_ADDR"], err)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || fmt.Sprint(c.Ports[0].ContainerPort) != port {
		t.Errorf("container ports %v; want one named http on LISTEN_ADDR's port %s", c.Ports, port)
	}
	for probe, want := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.StrVal != "http" {
			t.Errorf("probe %+v; want httpGet %s on port http", probe, want)
		}
	}
	for _, res := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if res.Cpu().IsZero() || res.Memory().IsZero() {
			t.Errorf("resources %v: want cpu and memory requests and limits", c.Resources)
		}
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container root filesystem is writable")
	}
	if !slices.ContainsFunc(k.Images, func(i kustomizeImage) bool { return i.Name == c.Image }) {
		t.Errorf("image %s has no entry in kustomization images, so overlays cannot set its tag", c.Image)
	}
}

func checkSelects(t *testing.T, what string, selector map[string]string, podLabels labels.Set) {
	t.Helper()
	if len(selector) == 0 || !labels.SelectorFromSet(selector).Matches(podLabels) {
		t.Errorf("%s selector %v does not select pods labelled %v", what, selector, podLabels)
	}
}

// TestFanoutDrainsBeforeKill: the grace period must cover preStop, the drain window and the
// shutdown timeout, or the kubelet kills a node that is still handing its viewers over.
func TestFanoutDrainsBeforeKill(t *testing.T) {
	objs := loadKube(t)
	d := objs.deployments["fanout-svc"]
	c := d.Spec.Template.Spec.Containers[0]
	env := containerEnv(t, objs, c)
	var preStop time.Duration
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Fatalf("fanout-svc has no preStop sleep")
	}
	preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	drain, err := time.ParseDuration(env["DRAIN_WINDOW"])
	if err != nil {
		t.Fatalf("DRAIN_WINDOW: %v", err)
	}
	shutdown, err := time.ParseDuration(env["SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatalf("SHUTDOWN_TIMEOUT: %v", err)
	}
	grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if need := preStop + drain + shutdown; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %v; want more than preStop %v + DRAIN_WINDOW %v + SHUTDOWN_TIMEOUT %v", grace, preStop, drain, shutdown)
	}
}

func TestHPAAndIngressTargets(t *testing.T) {
	objs := loadKube(t)
	hpa := objs.hpas["fanout-svc"]
	if hpa == nil {
		t.Fatal("no HorizontalPodAutoscaler for fanout-svc")
	}
	ref := hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || objs.deployments[ref.Name] == nil {
		t.Errorf("HPA targets %s %s %s; want an apps/v1 Deployment of the base", ref.APIVersion, ref.Kind, ref.Name)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || hpa.Spec.MaxReplicas <= *hpa.Spec.MinReplicas {
		t.Errorf("HPA replicas %v..%d; want at least 2 and room to grow", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	routed := map[string]bool{}
	for _, ing := range objs.ingresses {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				svc := objs.services[p.Backend.Service.Name]
				if svc == nil {
					t.Errorf("Ingress %s routes %s to unknown Service %s", ing.Name, p.Path, p.Backend.Service.Name)
					continue
				}
				if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == p.Backend.Service.Port.Name }) {
					t.Errorf("Ingress %s routes %s to port %q, which Service %s lacks", ing.Name, p.Path, p.Backend.Service.Port.Name, svc.Name)
				}
				routed[svc.Name+" "+p.Path] = true
			}
		}
	}
	for _, want := range []string{"writer-svc /like", "writer-svc /count", "fanout-svc /", "fanout-svc /assets", "fanout-svc /sse"} {
		if !routed[want] {
			t.Errorf("no Ingress routes %s; routes: %v", want, routed)
		}
	}
}

// TestKubeEnvMatchesCompose: a variable's name and meaning must agree between the two
// deployments; the values may differ, but a listen port must not.
func TestKubeEnvMatchesCompose(t *testing.T) {
	objs := loadKube(t)
	p := loadCompose(t)
	for _, name := range []string{"writer-svc", "fanout-svc"} {
		env := containerEnv(t, objs, objs.deployments[name].Spec.Template.Spec.Containers[0])
		if got, want := env["LISTEN_ADDR"], *p.Services[name].Environment["LISTEN_ADDR"]; got != want {
			t.Errorf("%s LISTEN_ADDR: kube %q, compose %q", name, got, want)
		}
	}
	redis := objs.configMaps["likes-redis"].Data
	if redis["REDIS_SENTINEL_ADDRS"] == "" {
		t.Errorf("likes-redis sets no REDIS_SENTINEL_ADDRS; the services would look for one Redis at the default URL")
	}
	if got, want := redis["REDIS_SENTINEL_MASTER"], serviceEnv(p.Services["writer-svc"], "REDIS_SENTINEL_MASTER"); got != want {
		t.Errorf("likes-redis REDIS_SENTINEL_MASTER %q; compose %q", got, want)
	}
	if url, ok := redis["REDIS_URL"]; ok && !regexp.MustCompile(`^redis(s)?://`).MatchString(url) {
		t.Errorf("likes-redis REDIS_URL %q is not a redis:// URL", url)
	}
	if got, want := objs.configMaps["writer-svc"].Data["REDIS_ACK_REPLICAS"], serviceEnv(p.Services["writer-svc"], "REDIS_ACK_REPLICAS"); got != want {
		t.Errorf("writer-svc REDIS_ACK_REPLICAS: kube %q, compose %q", got, want)
	}
	if strings.TrimSpace(objs.configMaps["fanout-svc"].Data["WRITER_PUBLIC_URL"]) == "" {
		t.Errorf("fanout-svc ConfigMap sets no WRITER_PUBLIC_URL; the page would post likes to localhost")
	}
}

// monitoringDir holds the Prometheus rules: mounted by the Compose stack, and made into a
// ConfigMap for Kubernetes by the component deploy/base includes.
var monitoringDir = filepath.Join(repoRoot, "deploy", "monitoring")

// rulesConfigMap is the ConfigMap deploy/monitoring's component generates.
const rulesConfigMap = "likes-prometheus-rules"

// kustomizeComponent is the part of deploy/monitoring/kustomization.yaml in use; unknown fields
// fail the test.
type kustomizeComponent struct {
	APIVersion         string               `json:"apiVersion"`
	Kind               string               `json:"kind"`
	ConfigMapGenerator []componentGenerator `json:"configMapGenerator"`
}

// componentGenerator is one configMapGenerator entry of a component.
type componentGenerator struct {
	Name    string   `json:"name"`
	Files   []string `json:"files"`
	Options struct {
		DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
		Labels                map[string]string `json:"labels"`
	} `json:"options"`
}

// componentConfigMap checks that the base k includes the Kustomize component in dir (for what,
// in the failure) and returns its one configMapGenerator, which must be named name.
func componentConfigMap(t *testing.T, k kustomization, dir, name, what string) componentGenerator {
	t.Helper()
	rel := "../" + filepath.Base(dir)
	if !slices.Contains(k.Components, rel) {
		t.Fatalf("kustomization components %v; want %s (%s)", k.Components, rel, what)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c kustomizeComponent
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	if c.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.Kind != "Component" {
		t.Errorf("%s is %s %s; want kustomize.config.k8s.io/v1alpha1 Component", dir, c.APIVersion, c.Kind)
	}
	if len(c.ConfigMapGenerator) != 1 || c.ConfigMapGenerator[0].Name != name {
		t.Fatalf("configMapGenerator %+v; want one, named %s", c.ConfigMapGenerator, name)
	}
	return c.ConfigMapGenerator[0]
}

// TestPrometheusRulesConfigMap: the base includes the monitoring component, whose ConfigMap
// holds exactly the rule files the Compose Prometheus loads (one copy of the rules, so the two
// cannot drift), under a fixed name, as a valid ConfigMap.
func TestPrometheusRulesConfigMap(t *testing.T) {
	k := readKustomization(t)
	gen := componentConfigMap(t, k, monitoringDir, rulesConfigMap, "the Prometheus rules")
	if !gen.Options.DisableNameSuffixHash {
		t.Errorf("%s gets a hash suffix; want a fixed name a Prometheus can mount", rulesConfigMap)
	}
	if loaded := composeRuleFiles(t); !slices.Equal(slices.Sorted(slices.Values(gen.Files)), slices.Sorted(slices.Values(loaded))) {
		t.Errorf("the ConfigMap holds %v; want the rule files the Compose Prometheus loads, %v", gen.Files, loaded)
	}
	cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: gen.Name, Namespace: k.Namespace, Labels: gen.Options.Labels}, Data: map[string]string{}}
	for _, f := range gen.Files {
		if filepath.Base(f) != f {
			t.Errorf("configMapGenerator file %s is not in deploy/monitoring itself", f)
		}
		b, err := os.ReadFile(filepath.Join(monitoringDir, f))
		if err != nil {
			t.Fatalf("configMapGenerator file: %v", err)
		}
		cm.Data[f] = string(b)
	}
	rendered, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	if obj, err := decodeManifest(rendered); err != nil {
		t.Errorf("the generated ConfigMap does not decode: %v", err)
	} else if got := obj.(*corev1.ConfigMap); len(got.Data) != len(gen.Files) {
		t.Errorf("the generated ConfigMap has keys %v; want one per file %v", slices.Collect(maps.Keys(got.Data)), gen.Files)
	}
}

// composeRuleFiles returns the rule_files of deploy/monitoring/prometheus.yml.
func composeRuleFiles(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles []string `json:"rule_files"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	if len(cfg.RuleFiles) == 0 {
		t.Fatal("prometheus.yml loads no rule_files")
	}
	return cfg.RuleFiles
}

// TestKustomizeRendersRulesConfigMap renders deploy/base with kubectl's Kustomize, when kubectl
// is installed, and finds the rules ConfigMap in the namespace with the files' exact contents,
// and the Redis script's ConfigMap with the script.
// Kubectl is not needed by anything else here (and Debian's kubernetes-client 1.20 predates
// components), so without it the test says so and skips; TestPrometheusRulesConfigMap checks
// the same files without rendering.
func TestKustomizeRendersRulesConfigMap(t *testing.T) {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH: the render of deploy/base is not checked (TestPrometheusRulesConfigMap checks its inputs)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "kustomize", kubeBase).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/base: %v", err)
	}
	k := readKustomization(t)
	var found, scripts *corev1.ConfigMap
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		obj, err := decodeManifest(doc)
		if err != nil {
			t.Fatalf("decode rendered object: %v\n%s", err, doc)
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == rulesConfigMap {
			found = cm
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == redisScriptsConfigMap {
			scripts = cm
		}
	}
	if script, err := os.ReadFile(redisScript); err != nil || scripts == nil || scripts.Data[filepath.Base(redisScript)] != string(script) {
		t.Errorf("kubectl kustomize deploy/base renders ConfigMap %s %v; want deploy/redis/likes-redis.sh in it (%v)", redisScriptsConfigMap, scripts != nil, err)
	}
	if found == nil {
		t.Fatalf("kubectl kustomize deploy/base renders no ConfigMap %s", rulesConfigMap)
	}
	if found.Namespace != k.Namespace {
		t.Errorf("ConfigMap %s in namespace %q; want %q", rulesConfigMap, found.Namespace, k.Namespace)
	}
	for _, f := range composeRuleFiles(t) {
		b, err := os.ReadFile(filepath.Join(monitoringDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if found.Data[f] != string(b) {
			t.Errorf("rendered ConfigMap key %s differs from deploy/monitoring/%s", f, f)
		}
	}
}

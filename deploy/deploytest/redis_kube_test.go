package deploytest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// The base's Redis: the ConfigMap the redis component makes of likes-redis.sh, where the pods
// mount it, and the two StatefulSets.
const (
	redisScriptsConfigMap = "likes-redis-scripts"
	kubeScriptDir         = "/scripts"
	kubeRedis             = "redis"
	kubeSentinel          = "sentinel"
)

// kubeRedisSet is one of the base's Redis StatefulSets with what it needs: its headless Service
// and its one container's environment.
type kubeRedisSet struct {
	sts *appsv1.StatefulSet
	svc *corev1.Service
	c   corev1.Container
	env map[string]string
}

// podName returns the stable name of the set's pod i, as the others resolve it: pod.service.
func (k kubeRedisSet) podName(i int) string {
	return fmt.Sprintf("%s-%d.%s", k.sts.Name, i, k.svc.Name)
}

// kubeRedisSetOf checks the parts every Redis StatefulSet of the base shares and returns it: a
// headless Service that publishes the pods' names before they are ready, selectors that select
// the pods, pods started in parallel, a PDB that lets one go at a time, the restricted pod
// security the namespace enforces, and its container running likes-redis.sh from the ConfigMap.
func kubeRedisSetOf(t *testing.T, objs *kubeObjects, name, role string) kubeRedisSet {
	t.Helper()
	sts := objs.statefulSets[name]
	if sts == nil {
		t.Fatalf("no StatefulSet %s", name)
	}
	podLabels := labels.Set(sts.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(podLabels) {
		t.Errorf("%s selector %v does not select the pod labels %v (err %v)", name, sts.Spec.Selector, podLabels, err)
	}
	svc := objs.services[sts.Spec.ServiceName]
	if svc == nil {
		t.Fatalf("%s serviceName %q: no such Service", name, sts.Spec.ServiceName)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: clusterIP %q, publishNotReadyAddresses %v; want headless, publishing the pods' names before they are ready", svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	checkSelects(t, "Service "+svc.Name, svc.Spec.Selector, podLabels)
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Errorf("%s replicas %v; want 3", name, sts.Spec.Replicas)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("%s podManagementPolicy %q; want Parallel, so that a lost pod 0 keeps no other from starting", name, sts.Spec.PodManagementPolicy)
	}
	pdb := objs.pdbs[name]
	if pdb == nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget %s %v; want maxUnavailable 1", name, pdb)
	} else {
		checkSelects(t, "PDB "+name, pdb.Spec.Selector.MatchLabels, podLabels)
	}
	pod := sts.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers; want 1", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	checkRestricted(t, name, pod, c)
	if pod.ShareProcessNamespace == nil || !*pod.ShareProcessNamespace {
		t.Errorf("%s shareProcessNamespace %v; want true, so that a timed-out probe's redis-cli is reaped", name, pod.ShareProcessNamespace)
	}
	if want := []string{"sh", kubeScriptDir + "/likes-redis.sh", role}; !slices.Equal(c.Command, want) {
		t.Errorf("%s command %v; want %v", name, c.Command, want)
	}
	if !mountsConfigMap(pod, c, redisScriptsConfigMap, kubeScriptDir) {
		t.Errorf("%s does not mount ConfigMap %s at %s", name, redisScriptsConfigMap, kubeScriptDir)
	}
	for _, res := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if res.Cpu().IsZero() || res.Memory().IsZero() {
			t.Errorf("%s resources %v: want cpu and memory requests and limits", name, c.Resources)
		}
	}
	k := kubeRedisSet{sts: sts, svc: svc, c: c, env: containerEnv(t, objs, c)}
	if k.env["POD_NAME"] != "$(field:metadata.name)" {
		t.Errorf("%s POD_NAME = %q; want the pod's name (fieldRef metadata.name)", name, k.env["POD_NAME"])
	}
	return k
}

// checkRestricted: what Pod Security "restricted" requires of a pod that the namespace admits.
func checkRestricted(t *testing.T, name string, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	ps, cs := pod.SecurityContext, c.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s pod securityContext %+v; want runAsNonRoot and the RuntimeDefault seccomp profile", name, ps)
	}
	if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.Capabilities == nil ||
		!slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem {
		t.Errorf("%s container securityContext %+v; want no privilege escalation, all capabilities dropped, a read-only root", name, cs)
	}
}

// mountsConfigMap reports whether container c of pod mounts ConfigMap cm at path.
func mountsConfigMap(pod corev1.PodSpec, c corev1.Container, cm, path string) bool {
	for _, v := range pod.Volumes {
		if v.ConfigMap == nil || v.ConfigMap.Name != cm {
			continue
		}
		if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name && m.MountPath == path }) {
			return true
		}
	}
	return false
}

// TestKubeRedisTopology: the base runs docker-compose.yml's Redis: three data pods, the first
// the initial primary, and three Sentinels, each announcing its stable name, with the same
// redis-server settings and Sentinel timing as under Compose, and the services' likes-redis
// ConfigMap naming every Sentinel pod under the master name the Sentinels use.
func TestKubeRedisTopology(t *testing.T) {
	objs := loadKube(t)
	data := kubeRedisSetOf(t, objs, kubeRedis, "node")
	sentinel := kubeRedisSetOf(t, objs, kubeSentinel, "sentinel")
	var addrs []string
	for i := range int(*sentinel.sts.Spec.Replicas) {
		addrs = append(addrs, sentinel.podName(i)+":26379")
	}
	redisCM := objs.configMaps["likes-redis"].Data
	if got, want := redisCM["REDIS_SENTINEL_ADDRS"], strings.Join(addrs, ","); got != want {
		t.Errorf("likes-redis REDIS_SENTINEL_ADDRS %q; want every Sentinel pod, %q", got, want)
	}
	for _, k := range []kubeRedisSet{data, sentinel} {
		for name, want := range map[string]string{
			"REDIS_INITIAL_PRIMARY": data.podName(0),
			"REDIS_SENTINEL_ADDRS":  redisCM["REDIS_SENTINEL_ADDRS"],
			"REDIS_SENTINEL_MASTER": redisCM["REDIS_SENTINEL_MASTER"],
		} {
			if got := k.env[name]; got != want || got == "" {
				t.Errorf("%s %s = %q; want %q", k.sts.Name, name, got, want)
			}
		}
	}
	if got, want := data.env["REDIS_NODE"], "$(POD_NAME)."+data.svc.Name; got != want {
		t.Errorf("redis REDIS_NODE = %q; want %q, the pod's stable name", got, want)
	}
	if got, want := sentinel.env["SENTINEL_NAME"], "$(POD_NAME)."+sentinel.svc.Name; got != want {
		t.Errorf("sentinel SENTINEL_NAME = %q; want %q, the pod's stable name", got, want)
	}
	checkKubeDataPods(t, data)
	checkKubeSentinelPods(t, sentinel)
	if got := objs.configMaps["writer-svc"].Data["REDIS_ACK_REPLICAS"]; got != "all" {
		t.Errorf("writer-svc REDIS_ACK_REPLICAS %q; want all (of the %d replicas, those the Sentinels do not call down)", got, *data.sts.Spec.Replicas-1)
	}
}

// checkKubeDataPods: the data pods keep /data on a claim of their own, run with docker-compose.yml's
// redis-server settings, are ready once in sync and alive while they load.
func checkKubeDataPods(t *testing.T, k kubeRedisSet) {
	t.Helper()
	p := loadCompose(t)
	if want := composeRedisOf(t, p).nodes[0].Command[3:]; !slices.Equal(k.c.Args, want) {
		t.Errorf("redis args %q; want docker-compose.yml's data-node options %q", k.c.Args, want)
	}
	if len(k.sts.Spec.VolumeClaimTemplates) != 1 || !slices.ContainsFunc(k.c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == k.sts.Spec.VolumeClaimTemplates[0].Name && m.MountPath == "/data"
	}) {
		t.Errorf("redis keeps /data outside its volumeClaimTemplate: mounts %v", k.c.VolumeMounts)
	}
	checkProbes(t, k, "check-node", "redis", 6379)
}

// checkKubeSentinelPods: the Sentinels get docker-compose.yml's quorum and timing and keep their
// configuration file on a volume that outlives a restart of the container.
func checkKubeSentinelPods(t *testing.T, k kubeRedisSet) {
	t.Helper()
	p := loadCompose(t)
	compose := composeRedisOf(t, p).sentinels[0]
	for _, name := range []string{"SENTINEL_QUORUM", "SENTINEL_DOWN_AFTER_MS", "SENTINEL_FAILOVER_TIMEOUT_MS"} {
		if got, want := k.env[name], serviceEnv(compose, name); got != want {
			t.Errorf("sentinel %s = %q; docker-compose.yml's %q", name, got, want)
		}
	}
	checkSentinelSettings(t, int(*k.sts.Spec.Replicas), k.env["SENTINEL_QUORUM"], k.env["SENTINEL_DOWN_AFTER_MS"], k.env["SENTINEL_FAILOVER_TIMEOUT_MS"])
	conf := k.env["SENTINEL_CONF"]
	var onVolume bool
	for _, m := range k.c.VolumeMounts {
		onVolume = onVolume || (conf != "" && filepath.Dir(conf) == m.MountPath && !m.ReadOnly)
	}
	if !onVolume {
		t.Errorf("sentinel SENTINEL_CONF %q is not on a writable volume (mounts %v): Sentinel rewrites it", conf, k.c.VolumeMounts)
	}
	checkProbes(t, k, "check-sentinel", "sentinel", 26379)
}

// checkProbes: readiness is the script's check, liveness a TCP connect to the named port, which
// the Service targets too.
func checkProbes(t *testing.T, k kubeRedisSet, check, port string, number int32) {
	t.Helper()
	name := k.sts.Name
	if len(k.c.Ports) != 1 || k.c.Ports[0].Name != port || k.c.Ports[0].ContainerPort != number {
		t.Errorf("%s ports %v; want one named %s on %d", name, k.c.Ports, port, number)
	}
	if len(k.svc.Spec.Ports) != 1 || k.svc.Spec.Ports[0].TargetPort.StrVal != port || k.svc.Spec.Ports[0].Port != number {
		t.Errorf("Service %s ports %v; want %d targeting port %s", k.svc.Name, k.svc.Spec.Ports, number, port)
	}
	want := []string{"sh", kubeScriptDir + "/likes-redis.sh", check}
	if r := k.c.ReadinessProbe; r == nil || r.Exec == nil || !slices.Equal(r.Exec.Command, want) {
		t.Errorf("%s readinessProbe %+v; want exec %v", name, r, want)
	}
	if l := k.c.LivenessProbe; l == nil || l.TCPSocket == nil || l.TCPSocket.Port.StrVal != port {
		t.Errorf("%s livenessProbe %+v; want a TCP connect to port %s", name, l, port)
	}
}

// TestKubeRedisImage: the Redis pods run docker-compose.yml's default REDIS_IMAGE, which
// kustomization images can replace.
func TestKubeRedisImage(t *testing.T) {
	objs := loadKube(t)
	k := readKustomization(t)
	compose := composeRedisOf(t, loadCompose(t)).nodes[0].Image // the default, with no REDIS_IMAGE set
	name, tag, _ := strings.Cut(compose, ":")
	for _, set := range []string{kubeRedis, kubeSentinel} {
		c := objs.statefulSets[set].Spec.Template.Spec.Containers[0]
		i := slices.IndexFunc(k.Images, func(i kustomizeImage) bool { return i.Name == c.Image })
		if i < 0 {
			t.Errorf("%s image %s has no entry in kustomization images, so overlays cannot set it", set, c.Image)
			continue
		}
		if c.Image != name || k.Images[i].NewTag != tag {
			t.Errorf("%s image %s:%s; want docker-compose.yml's %s", set, c.Image, k.Images[i].NewTag, compose)
		}
	}
}

// TestRedisScriptsConfigMap: the base includes the redis component, whose ConfigMap holds
// exactly the script docker-compose.yml mounts, under the fixed name the pods mount.
func TestRedisScriptsConfigMap(t *testing.T) {
	gen := componentConfigMap(t, readKustomization(t), redisScriptDir, redisScriptsConfigMap, "the Redis start script")
	if !gen.Options.DisableNameSuffixHash {
		t.Errorf("%s gets a hash suffix; want the fixed name the StatefulSets mount", redisScriptsConfigMap)
	}
	if want := []string{filepath.Base(redisScript)}; !slices.Equal(gen.Files, want) {
		t.Errorf("the ConfigMap holds %v; want %v, the file docker-compose.yml mounts", gen.Files, want)
	}
}

// TestRedisScriptReadsWhatItIsGiven: every variable the Redis containers get, under Compose and
// Kubernetes, is one likes-redis.sh reads (a misspelt name would be silently ignored).
func TestRedisScriptReadsWhatItIsGiven(t *testing.T) {
	raw, err := os.ReadFile(redisScript)
	if err != nil {
		t.Fatal(err)
	}
	script := string(raw)
	reads := func(name string) bool {
		return regexp.MustCompile(`\$\{?` + name + `\b`).MatchString(script)
	}
	given := map[string]string{}
	for _, s := range composeRedisOf(t, loadCompose(t)).all() {
		for name := range s.Environment {
			given[name] = "docker-compose.yml " + s.Name
		}
	}
	objs := loadKube(t)
	for _, set := range []string{kubeRedis, kubeSentinel} {
		for _, e := range objs.statefulSets[set].Spec.Template.Spec.Containers[0].Env {
			if e.Name != "POD_NAME" { // only to build the names below
				given[e.Name] = "StatefulSet " + set
			}
		}
	}
	for name, where := range given {
		if !reads(name) {
			t.Errorf("%s sets %s, which likes-redis.sh does not read", where, name)
		}
	}
}

// oneRedisDir is the Component an overlay includes to use one Redis of its own instead.
var oneRedisDir = filepath.Join(repoRoot, "deploy", "one-redis")

// kustomizePatches is the part of a kustomization with inline patches; unknown fields fail.
type kustomizePatches struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Patches    []struct {
		Patch string `json:"patch"`
	} `json:"patches"`
}

// TestOneRedisComponent: deploy/one-redis deletes every Redis object the base has and nothing
// else, removes the Sentinel keys from likes-redis (so that the services use REDIS_URL) and sets
// the writers' REDIS_ACK_REPLICAS to 0.
func TestOneRedisComponent(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(oneRedisDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomizePatches
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("deploy/one-redis/kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1alpha1" || k.Kind != "Component" {
		t.Errorf("deploy/one-redis is %s %s; want kustomize.config.k8s.io/v1alpha1 Component", k.APIVersion, k.Kind)
	}
	var deleted []string
	data := map[string]map[string]*string{} // ConfigMap -> key -> value (nil: removed)
	for _, p := range k.Patches {
		var obj struct {
			Patch    string `json:"$patch"`
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data map[string]*string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(p.Patch), &obj); err != nil {
			t.Fatalf("patch %q: %v", p.Patch, err)
		}
		switch {
		case obj.Patch == "delete":
			deleted = append(deleted, obj.Kind+" "+obj.Metadata.Name)
		case obj.Kind == "ConfigMap":
			data[obj.Metadata.Name] = obj.Data
		default:
			t.Errorf("unexpected patch of %s %s", obj.Kind, obj.Metadata.Name)
		}
	}
	objs := loadKube(t)
	want := []string{"ConfigMap " + redisScriptsConfigMap}
	for _, set := range []string{kubeRedis, kubeSentinel} {
		want = append(want, "StatefulSet "+set, "Service "+objs.statefulSets[set].Spec.ServiceName, "PodDisruptionBudget "+set)
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, slices.Sorted(slices.Values(want))) {
		t.Errorf("deletes %v; want the base's Redis objects %v", deleted, want)
	}
	for _, key := range []string{"REDIS_SENTINEL_ADDRS", "REDIS_SENTINEL_MASTER"} {
		if v, ok := data["likes-redis"][key]; !ok || v != nil {
			t.Errorf("likes-redis %s patched to %v; want null (removed), so that REDIS_URL is used", key, v)
		}
	}
	if v := data["writer-svc"]["REDIS_ACK_REPLICAS"]; v == nil || *v != "0" {
		t.Errorf("writer-svc REDIS_ACK_REPLICAS patched to %v; want 0", v)
	}
	renderOneRedis(t)
}

// renderOneRedis renders an overlay of the base with deploy/one-redis and a REDIS_URL, where
// kubectl is installed, and finds no Redis object left and likes-redis holding only the URL.
func renderOneRedis(t *testing.T) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not on PATH: the overlay with deploy/one-redis is not rendered")
		return
	}
	dir := t.TempDir()
	base, err1 := filepath.Rel(dir, kubeBase)
	comp, err2 := filepath.Rel(dir, oneRedisDir)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	overlay := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [%s]
components: [%s]
patches:
  - patch: |-
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: likes-redis}
      data: {REDIS_URL: "redis://redis.example.internal:6379/0"}
`, base, comp)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize of an overlay with deploy/one-redis: %v", err)
	}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		obj, err := decodeManifest(doc)
		if err != nil {
			t.Fatalf("decode rendered object: %v\n%s", err, doc)
		}
		switch v := obj.(type) {
		case *appsv1.StatefulSet:
			t.Errorf("the overlay still renders StatefulSet %s", v.Name)
		case *corev1.ConfigMap:
			if v.Name == "likes-redis" && (v.Data["REDIS_URL"] == "" || v.Data["REDIS_SENTINEL_ADDRS"] != "" || v.Data["REDIS_SENTINEL_MASTER"] != "") {
				t.Errorf("the overlay renders likes-redis %v; want REDIS_URL and no Sentinel keys", v.Data)
			}
		}
	}
}

package kubetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/deploy/helm/helmtest"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
)

// figures collects the suite's measurements, logged together at the end (docs/RELIABILITY.md
// quotes them).
type figures []string

func (f *figures) add(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	*f = append(*f, line)
}

// deployment is what the steps share: the Services' addresses.
type deployment struct {
	writer string // writer-svc's Service
	fanout string // fanout-svc's Service
}

// TestKubeDeploy installs the chart and walks an operator's day on it (see the package doc).
func TestKubeDeploy(t *testing.T) {
	needCluster(t)
	var got figures
	d := stepInstall(t, &got)
	stepPodSecurity(t)
	stepSomaxconn(t, &got)
	stepLike(t, d)
	stepIngress(t, d, &got)
	stepScaleAndRamp(t, d, &got)
	stepHPA(t, &got)
	stepRollout(t, d, &got)
	stepEvict(t, &got)
	stepKill(t, d, &got)
	stepRedisRestart(t, d, &got)
	stepForwardedFor(t, d, &got)
	t.Logf("figures:\n  %s", strings.Join(got, "\n  "))
}

// stepInstall installs the chart (deploy/helm/likes with this cluster's values) as the release
// likes and waits for every Pod to be Ready through its own probe.
func stepInstall(t *testing.T, got *figures) deployment {
	start := time.Now()
	// The namespace first, with its Pod Security label (a chart installs into a namespace, it
	// does not make it), then the levels that admit the fanout Pods' sysctl (sysctl_test.go).
	// --force-conflicts: on a cluster kept from an earlier run, admitSysctls's label owns the
	// enforce level, and the base's applies over it before admitSysctls sets it again.
	mustKubectl(t, time.Minute, "apply", "--server-side", "--force-conflicts", "-f", "deploy/base/namespace.yaml")
	admitSysctls(t)
	mustHelm(t, 5*time.Minute, "upgrade", "--install", release, helmtest.Chart(repoRoot), "--namespace", namespace,
		"-f", "deploy/helm/values-kube-offline.yaml")
	// The credentials Job makes the Secret every Redis pod and service mounts; its pod completes
	// rather than turning Ready, so it is awaited as a Job and left out of the Ready wait.
	mustKubectl(t, 3*time.Minute, "-n", namespace, "wait", "--for=condition=Complete", "job/likes-credentials", "--timeout=2m")
	for _, w := range []string{"statefulset/redis", "statefulset/sentinel", "deployment/writer-svc", "deployment/fanout-svc"} {
		mustKubectl(t, 6*time.Minute, "-n", namespace, "rollout", "status", w, "--timeout=5m")
	}
	mustKubectl(t, 3*time.Minute, "-n", namespace, "wait", "--for=condition=Ready", "pod",
		"-l", "app.kubernetes.io/component!=credentials", "--timeout=2m")
	got.add(t, "install: every Pod Ready %v after helm upgrade --install of deploy/helm/likes", time.Since(start).Round(time.Second))
	// The objects are the release's: Helm knows it deployed, and labels what it made.
	if status := mustHelm(t, time.Minute, "status", release, "--namespace", namespace); !strings.Contains(status, "STATUS: deployed") {
		t.Fatalf("helm status %s:\n%s", release, status)
	}
	managed := mustKubectl(t, time.Minute, "-n", namespace, "get", "deploy,sts,svc,pdb,hpa,ingress,networkpolicy,job",
		"-l", "app.kubernetes.io/instance="+release+",app.kubernetes.io/managed-by=Helm", "-o", "name")
	if n := len(strings.Fields(managed)); n != 21 {
		t.Fatalf("%d objects labelled as the release's: %s; want the chart's 21", n, managed)
	}
	// Redis's data is on the chart's own claims, bound by the cluster's default StorageClass.
	claims := mustKubectl(t, time.Minute, "-n", namespace, "get", "pvc", "-l", "app.kubernetes.io/name=redis",
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.phase}/{.spec.storageClassName} {end}`)
	if want := "data-redis-0=Bound/likes-local data-redis-1=Bound/likes-local data-redis-2=Bound/likes-local"; strings.TrimSpace(claims) != want {
		t.Fatalf("Redis's claims: %q; want %q", claims, want)
	}
	return deployment{writer: serviceURL(t, "writer-svc", 8080), fanout: serviceURL(t, "fanout-svc", 8090)}
}

// stepLike: a like through the writer's Service reaches viewers on every fanout Pod, connected
// through the fanout Service.
func stepLike(t *testing.T, d deployment) {
	const post = "kube-like"
	fanout := readyPods(t, "fanout-svc")
	before := map[string]float64{}
	for _, p := range fanout {
		n, err := viewersOn(p)
		if err != nil {
			t.Fatalf("fanout pod %s: %v", p.Metadata.Name, err)
		}
		before[p.Metadata.Name] = n
	}
	// Through the Service, kube-proxy picks a Pod per connection at random: 24 viewers leave a
	// Pod of two without one once in 2^23.
	viewers := make([]*clienttest.Viewer, 24)
	for i := range viewers {
		viewers[i] = clienttest.Watch(t, d.fanout+"/sse/"+post)
	}
	// Two minutes, not seconds: on this busy node a run saw every exec and HTTP probe time out for
	// 20 s just after the Pods were Ready, and viewers whose first connects fail come back on their
	// own retry delays.
	poll.Check(t, 2*time.Minute, func() error {
		held, connected := []string{}, 0
		for _, v := range viewers {
			if v.Connected() {
				connected++
			}
		}
		all := true
		for _, p := range fanout {
			n, err := viewersOn(p)
			held = append(held, fmt.Sprintf("%s %v (before %v, %v)", p.Metadata.Name, n, before[p.Metadata.Name], err))
			all = all && err == nil && n > before[p.Metadata.Name]
		}
		if !all {
			return fmt.Errorf("every fanout Pod to hold some of the 24 viewers (%d connected): %s", connected, strings.Join(held, ", "))
		}
		return nil
	})
	code, reply, err := clienttest.TryLikeAs(d.writer, post, session(t, d))
	if err != nil || code != 200 || !reply.Liked {
		t.Fatalf("like through writer-svc: %d %+v %v", code, reply, err)
	}
	clienttest.WaitCount(t, 10*time.Second, post, reply.Count, viewers...)
	for _, v := range viewers {
		v.Close()
	}
}

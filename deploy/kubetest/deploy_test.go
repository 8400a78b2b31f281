package kubetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/clienttest"
	"github.com/likes/likes/pkg/poll"
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

// TestKubeDeploy applies deploy/kube and walks an operator's day on it (see the package doc).
func TestKubeDeploy(t *testing.T) {
	needCluster(t)
	var got figures
	d := stepApply(t, &got)
	stepLike(t, d)
	stepScaleAndRamp(t, d, &got)
	stepHPA(t, &got)
	stepRollout(t, d, &got)
	stepEvict(t, &got)
	stepKill(t, d, &got)
	stepRedisRestart(t, d, &got)
	t.Logf("figures:\n  %s", strings.Join(got, "\n  "))
}

// stepApply applies the overlay and waits for every Pod to be Ready through its own probe.
func stepApply(t *testing.T, got *figures) deployment {
	start := time.Now()
	// The namespace first: the other objects are namespaced, and a server-side apply of all of
	// them at once can race the namespace's creation.
	mustKubectl(t, time.Minute, "apply", "--server-side", "-f", "deploy/base/namespace.yaml")
	mustKubectl(t, 2*time.Minute, "apply", "--server-side", "-k", "deploy/kube")
	// The credentials Job makes the Secret every Redis pod and service mounts; its pod completes
	// rather than turning Ready, so it is awaited as a Job and left out of the Ready wait.
	mustKubectl(t, 3*time.Minute, "-n", namespace, "wait", "--for=condition=Complete", "job/likes-credentials", "--timeout=2m")
	for _, w := range []string{"statefulset/redis", "statefulset/sentinel", "deployment/writer-svc", "deployment/fanout-svc"} {
		mustKubectl(t, 6*time.Minute, "-n", namespace, "rollout", "status", w, "--timeout=5m")
	}
	mustKubectl(t, 3*time.Minute, "-n", namespace, "wait", "--for=condition=Ready", "pod",
		"-l", "app.kubernetes.io/component!=credentials", "--timeout=2m")
	got.add(t, "apply: every Pod Ready %v after kubectl apply -k deploy/kube", time.Since(start).Round(time.Second))
	// Redis's data is on the base's own claims, bound by the cluster's default StorageClass.
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

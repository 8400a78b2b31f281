package kubetest

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// rampJob is loadgen's ramp as a Job in the likes namespace (its image, likes/loadgen:dev, as
// docker-compose.yml builds it): every fanout Pod through the headless fanout-svc-pods, likes
// through writer-svc as load-test users (--identity bench: the benchmark key that the chart's
// writer.benchSessions, on in deploy/helm/values-kube-offline.yaml, turns the writers'
// benchmark mode on with), Redis read through the Sentinels as the monitor
// user, both from the Secret the credentials Job made; JSON on stdout. It meets "restricted"
// Pod Security like the base's Pods (the namespace's warn level while the suite runs:
// sysctl_test.go).
const rampJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: loadgen-ramp
  namespace: likes
spec:
  backoffLimit: 0
  ttlSecondsAfterFinished: 600
  template:
    metadata:
      labels:
        likes.io/redis-client: monitor
        likes.io/bench-client: "true"
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        fsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      volumes:
        - name: credentials
          secret:
            secretName: likes-redis-credentials
            defaultMode: 0440
            items:
              - {key: monitor.password, path: monitor.password}
              - {key: bench-session.key, path: bench-session.key}
      containers:
        - name: loadgen
          image: likes/loadgen:dev
          args: [ramp, --conns, "200,400", --rate, "20", --warmup, 2s, --window, 6s, --json]
          env:
            - {name: LOADGEN_WRITER, value: "http://writer-svc:8080"}
            - {name: LOADGEN_FANOUT, value: "http://fanout-svc-pods:8090"}
            - {name: LOADGEN_REDIS_SENTINEL_ADDRS, value: "sentinel-0.sentinel:26379,sentinel-1.sentinel:26379,sentinel-2.sentinel:26379"}
            - {name: LOADGEN_REDIS_SENTINEL_MASTER, value: mymaster}
            - {name: LOADGEN_REDIS_USERNAME, value: monitor}
            - {name: LOADGEN_REDIS_PASSWORD_FILE, value: /credentials/monitor.password}
            - {name: LOADGEN_IDENTITY, value: bench}
            - {name: LOADGEN_BENCH_KEY_FILE, value: /credentials/bench-session.key}
          volumeMounts:
            - {name: credentials, mountPath: /credentials, readOnly: true}
          resources:
            requests: {cpu: 100m, memory: 64Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
`

// rampResult is the part of `loadgen ramp --json` the step reads (loadgen's report names).
type rampResult struct {
	Nodes  []string `json:"fanout_nodes"`
	Phases []struct {
		ConnsWanted int      `json:"conns_wanted"`
		ConnsOpen   int      `json:"conns_open"`
		DeliveryPct *float64 `json:"delivery_pct"`
		Convergence *float64 `json:"convergence_pct"`
		LatencyP99  *float64 `json:"latency_p99_ms"`
		Broke       []string `json:"slo_broken"`
		Nodes       []struct {
			URL     string   `json:"url"`
			Viewers *float64 `json:"viewers"`
		} `json:"nodes"`
	} `json:"phases"`
}

// stepScaleAndRamp raises the HPA's floor to four (a `kubectl scale` would fight the HPA), waits
// for four Ready fanout Pods, then runs the ramp as a Job and reads its result back: loadgen must
// find all four Pods and spread its viewers over them, and every phase deliver every like.
func stepScaleAndRamp(t *testing.T, d deployment, got *figures) {
	start := time.Now()
	mustKubectl(t, time.Minute, "-n", namespace, "patch", "hpa", "fanout-svc", "--type=merge", "-p", `{"spec":{"minReplicas":4}}`)
	awaitFanout(t, 4, 3*time.Minute)
	got.add(t, "scale: 4 fanout Pods Ready %v after raising the HPA's minReplicas", time.Since(start).Round(time.Second))

	start = time.Now()
	if _, err := kubectl(time.Minute, rampJob, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = kubectl(time.Minute, "", "-n", namespace, "delete", "job", "loadgen-ramp", "--wait=false")
	}()
	if _, err := kubectl(8*time.Minute, "", "-n", namespace, "wait", "--for=condition=Complete", "job/loadgen-ramp", "--timeout=7m"); err != nil {
		logs, _ := kubectl(time.Minute, "", "-n", namespace, "logs", "job/loadgen-ramp")
		t.Fatalf("the ramp's Job did not complete: %v\n%s", err, tail(logs, 4000))
	}
	out := mustKubectl(t, time.Minute, "-n", namespace, "logs", "job/loadgen-ramp")
	var res rampResult
	i := strings.Index(out, "{")
	if i < 0 || json.Unmarshal([]byte(out[i:]), &res) != nil {
		t.Fatalf("loadgen printed no JSON result:\n%s", tail(out, 4000))
	}
	if len(res.Nodes) != 4 {
		t.Fatalf("the ramp found %d fanout nodes %v; want the 4 Pods", len(res.Nodes), res.Nodes)
	}
	for _, p := range res.Phases {
		if len(p.Broke) > 0 || p.ConnsOpen != p.ConnsWanted {
			t.Errorf("%d viewers: %d open, objectives broken %v; want all open, none broken", p.ConnsWanted, p.ConnsOpen, p.Broke)
		}
		if p.DeliveryPct == nil || *p.DeliveryPct < 99.9 || p.Convergence == nil || *p.Convergence != 100 {
			t.Errorf("%d viewers: delivery %v%%, convergence %v%%; want 99.9 and 100", p.ConnsWanted, ptr(p.DeliveryPct), ptr(p.Convergence))
		}
		share := float64(p.ConnsWanted) / 4
		for _, n := range p.Nodes {
			// The gauge also counts viewers the suite's other steps may still hold.
			if n.Viewers == nil || math.Abs(*n.Viewers-share) > 10 {
				t.Errorf("%d viewers: node %s holds %v; want its share, %.0f", p.ConnsWanted, n.URL, ptr(n.Viewers), share)
			}
		}
		got.add(t, "ramp: %d viewers over 4 Pods, delivery %v%%, convergence %v%%, p99 %v ms", p.ConnsWanted, ptr(p.DeliveryPct), ptr(p.Convergence), ptr(p.LatencyP99))
	}
	got.add(t, "ramp: the Job ran %v", time.Since(start).Round(time.Second))
}

// ptr prints a figure loadgen may leave out.
func ptr(f *float64) any {
	if f == nil {
		return "-"
	}
	return math.Round(*f*10) / 10
}

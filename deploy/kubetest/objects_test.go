package kubetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
)

// pod is the part of a Pod the suite reads.
type pod struct {
	Metadata struct {
		Name              string  `json:"name"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// ready is whether the Pod is Ready and not on its way out.
func (p pod) ready() bool {
	if p.Metadata.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// url is the Pod's own HTTP address on port.
func (p pod) url(port int) string { return fmt.Sprintf("http://%s:%d", p.Status.PodIP, port) }

// pods lists the Pods of app (its app.kubernetes.io/name label).
func pods(t *testing.T, app string) []pod {
	t.Helper()
	out := mustKubectl(t, time.Minute, "-n", namespace, "get", "pods", "-l", "app.kubernetes.io/name="+app, "-o", "json")
	var list struct {
		Items []pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("kubectl get pods: %v", err)
	}
	return list.Items
}

// readyPods is the Ready Pods of app, not terminating.
func readyPods(t *testing.T, app string) []pod {
	t.Helper()
	var ready []pod
	for _, p := range pods(t, app) {
		if p.ready() {
			ready = append(ready, p)
		}
	}
	return ready
}

// serviceURL is the Service's virtual address (kube-proxy answers it on this machine).
func serviceURL(t *testing.T, name string, port int) string {
	t.Helper()
	ip := strings.TrimSpace(mustKubectl(t, time.Minute, "-n", namespace, "get", "svc", name, "-o", "jsonpath={.spec.clusterIP}"))
	if ip == "" || ip == "None" {
		t.Fatalf("service %s has no cluster IP (%q)", name, ip)
	}
	return fmt.Sprintf("http://%s:%d", ip, port)
}

// viewersOn reads a fanout Pod's own count of its viewers.
func viewersOn(p pod) (float64, error) {
	return clienttest.ScrapeMetric(p.url(8090), "likes_fanout_viewers")
}

// awaitFanout waits until fanout-svc has want Ready Pods, none terminating, and returns them.
func awaitFanout(t *testing.T, want int, within time.Duration) []pod {
	t.Helper()
	var ready []pod
	await(t, within, 500*time.Millisecond, fmt.Sprintf("%d Ready fanout-svc Pods and no others", want), func() error {
		all := pods(t, "fanout-svc")
		ready = ready[:0]
		for _, p := range all {
			if p.ready() {
				ready = append(ready, p)
			}
		}
		if len(ready) != want || len(all) != want {
			return fmt.Errorf("%d Ready of %d Pods", len(ready), len(all))
		}
		return nil
	})
	return ready
}

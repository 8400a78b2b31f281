package kubetest

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// somaxconn is the fanout Pods' listen backlog in deploy/helm/values-kube-offline.yaml
// (fanout.sysctls; deploytest holds deploy/somaxconn to the same value): not the kernel's
// default, 4096, which every new network namespace starts with, so a Pod whose sysctl was lost
// reads differently.
const somaxconn = "16384"

// Pod Security levels of the namespace while the suite runs. net.core.somaxconn is not on the
// kubelet's safe list, and Pod Security's baseline and restricted levels admit that list only:
// with the base's enforce=restricted the ReplicaSet's fanout Pods would be refused. So the suite
// enforces "privileged" and keeps "restricted" as the warn and audit levels, as deploy/somaxconn
// does, and stepPodSecurity checks that the sysctl is the only rule a Pod breaks.
var podSecurityLabels = []string{
	"pod-security.kubernetes.io/enforce=privileged",
	"pod-security.kubernetes.io/warn=restricted",
	"pod-security.kubernetes.io/audit=restricted",
}

// admitSysctls sets the namespace's Pod Security to podSecurityLabels.
func admitSysctls(t *testing.T) {
	t.Helper()
	mustKubectl(t, time.Minute, append([]string{"label", "--overwrite", "namespace", namespace}, podSecurityLabels...)...)
}

// stepPodSecurity asks the API server, in a dry run, what enforcing "restricted" again would
// refuse among the running Pods: the fanout Pods for their sysctl, and nothing else.
func stepPodSecurity(t *testing.T) {
	out := mustKubectl(t, time.Minute, "label", "--dry-run=server", "--overwrite", "namespace", namespace,
		"pod-security.kubernetes.io/enforce=restricted")
	var refused []string
	for _, line := range strings.Split(out, "\n") {
		w, ok := strings.CutPrefix(strings.TrimSpace(line), "Warning: ")
		if !ok || strings.Contains(w, "violate the new PodSecurity enforce level") {
			continue
		}
		refused = append(refused, w)
		// The warning names a Pod and the reasons only, no details: "fanout-svc-... (and 1 other
		// pod): forbidden sysctls" (pod-security-admission admission.go, existing pods).
		if !strings.HasPrefix(w, "fanout-svc-") || !strings.HasSuffix(w, ": forbidden sysctls") {
			t.Errorf("Pod Security restricted would refuse %q; want only the fanout Pods, for their sysctl", w)
		}
	}
	if len(refused) == 0 {
		t.Errorf("Pod Security restricted would refuse no Pod (%s); want the fanout Pods, for their sysctl", strings.TrimSpace(out))
	}
}

// stepSomaxconn reads net.core.somaxconn inside every Ready fanout Pod's network namespace. The
// fanout image has no shell and no cat, so an ephemeral container (kubectl debug) of the Redis
// image, already on the node, shares the Pod's network namespace and prints the value; its log
// is the answer.
func stepSomaxconn(t *testing.T, got *figures) {
	image := strings.TrimSpace(mustKubectl(t, time.Minute, "-n", namespace, "get", "statefulset", "redis",
		"-o", "jsonpath={.spec.template.spec.containers[0].image}"))
	fanout := readyPods(t, "fanout-svc")
	if len(fanout) == 0 {
		t.Fatal("no Ready fanout Pod to read net.core.somaxconn in")
	}
	const container = "somaxconn"
	for _, p := range fanout {
		mustKubectl(t, time.Minute, "-n", namespace, "debug", "pod/"+p.Metadata.Name, "--container="+container,
			"--image="+image, "--image-pull-policy=Never", "--profile=general", "--",
			"cat", "/proc/sys/net/core/somaxconn")
		var value string
		await(t, 2*time.Minute, time.Second, "net.core.somaxconn read in fanout Pod "+p.Metadata.Name, func() error {
			out, err := kubectl(30*time.Second, "", "-n", namespace, "logs", "pod/"+p.Metadata.Name, "-c", container)
			if err != nil {
				return err
			}
			if value = strings.TrimSpace(out); value == "" {
				return errors.New("no output yet")
			}
			return nil
		})
		if value != somaxconn {
			t.Fatalf("fanout Pod %s: net.core.somaxconn %s; want %s (fanout.sysctls)", p.Metadata.Name, value, somaxconn)
		}
	}
	got.add(t, "sysctl: net.core.somaxconn %s inside each of the %d fanout Pods", somaxconn, len(fanout))
}

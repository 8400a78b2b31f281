package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// somaxconnDir is the Component an overlay includes to raise the fanout pods' listen backlog.
var somaxconnDir = filepath.Join(repoRoot, "deploy", "somaxconn")

// TestSomaxconnComponent renders an overlay of the base with deploy/somaxconn: the fanout pods,
// and no others, get net.core.somaxconn in their securityContext beside the base's restricted
// settings; the namespace enforces "privileged" (Pod Security's baseline and restricted refuse
// any sysctl off the kubelet's safe list) and still warns and audits at "restricted". The value
// is the one the kube suite installs (deploy/helm/values-kube-offline.yaml) and reads back in a
// running pod.
func TestSomaxconnComponent(t *testing.T) {
	dir := t.TempDir()
	base, err1 := filepath.Rel(dir, kubeBase)
	comp, err2 := filepath.Rel(dir, somaxconnDir)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	overlay := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n", base, comp)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := kustomizeRender(t, dir)

	want := suiteSomaxconn(t)
	fanout := objs.deployments["fanout-svc"].Spec.Template.Spec.SecurityContext
	if fanout == nil || len(fanout.Sysctls) != 1 || fanout.Sysctls[0].Name != "net.core.somaxconn" || fanout.Sysctls[0].Value != want {
		t.Fatalf("fanout-svc's pod securityContext %+v; want sysctls [net.core.somaxconn=%s]", fanout, want)
	}
	if fanout.RunAsNonRoot == nil || !*fanout.RunAsNonRoot || fanout.SeccompProfile == nil {
		t.Errorf("fanout-svc's pod securityContext %+v lost the base's restricted settings", fanout)
	}
	for name, d := range objs.deployments {
		if sc := d.Spec.Template.Spec.SecurityContext; name != "fanout-svc" && sc != nil && len(sc.Sysctls) > 0 {
			t.Errorf("Deployment %s has sysctls %v; the component is fanout's alone", name, sc.Sysctls)
		}
	}
	for name, s := range objs.statefulSets {
		if sc := s.Spec.Template.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
			t.Errorf("StatefulSet %s has sysctls %v; the component is fanout's alone", name, sc.Sysctls)
		}
	}
	namespace := readKustomization(t).Namespace
	ns, ok := objs.namespaces[namespace]
	if !ok {
		t.Fatalf("the overlay renders no namespace %s", namespace)
	}
	for level, want := range map[string]string{"enforce": "privileged", "warn": "restricted", "audit": "restricted"} {
		if got := ns.Labels["pod-security.kubernetes.io/"+level]; got != want {
			t.Errorf("namespace %s: pod-security.kubernetes.io/%s %q; want %q", namespace, level, got, want)
		}
	}
}

// suiteSomaxconn is the net.core.somaxconn the kube suite's values give the fanout pods.
func suiteSomaxconn(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "helm", "values-kube-offline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Fanout struct {
			Sysctls []struct{ Name, Value string } `json:"sysctls"`
		} `json:"fanout"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("values-kube-offline.yaml: %v", err)
	}
	for _, s := range v.Fanout.Sysctls {
		if s.Name == "net.core.somaxconn" {
			return s.Value
		}
	}
	t.Fatal("deploy/helm/values-kube-offline.yaml sets no net.core.somaxconn for fanout")
	return ""
}

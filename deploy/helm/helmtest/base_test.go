package helmtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The chart and deploy/base deploy the same thing: rendered with the base's network policy
// choices (testdata/like-base.yaml), every object of the base has its twin in the chart, equal
// but for what Helm and Kustomize each add (labels, annotations, the images' names and tags) and
// the replicas a Deployment leaves to its HPA.
func TestObjectsEqualTheBase(t *testing.T) {
	chart := render(t, values("like-base.yaml")...)
	files, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "base", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" || filepath.Base(f) == "namespace.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var base object
		if err := yaml.Unmarshal(b, &base); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got, ok := chart[base.id()]
		if !ok {
			t.Errorf("%s (%s) is not rendered by the chart", base.id(), filepath.Base(f))
			continue
		}
		seen++
		want, have := comparable(base), comparable(got)
		if !reflect.DeepEqual(want, have) {
			w, _ := json.MarshalIndent(want, "", " ")
			h, _ := json.MarshalIndent(have, "", " ")
			t.Errorf("%s differs from %s:\nbase:  %s\nchart: %s", base.id(), filepath.Base(f), w, h)
		}
	}
	if seen < 25 {
		t.Errorf("compared %d objects of deploy/base; want every one", seen)
	}
}

// comparable is o without what Helm and Kustomize each add: labels and annotations (the object's
// and its pod template's), the containers' images, and a Deployment's replicas when an HPA owns
// them. The selectors stay: they are immutable, and equal ones let the chart adopt the base's
// objects.
func comparable(o object) any {
	b, _ := json.Marshal(o)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	md, _ := c["metadata"].(map[string]any)
	delete(md, "labels")
	delete(md, "annotations")
	spec, _ := c["spec"].(map[string]any)
	if c["kind"] == "Deployment" && md["name"] == "fanout-svc" {
		delete(spec, "replicas")
	}
	if tmpl, ok := spec["template"].(map[string]any); ok {
		delete(tmpl, "metadata")
		containers, _ := get(tmpl, "spec", "containers").([]any)
		for _, ct := range containers {
			m := ct.(map[string]any)
			delete(m, "imagePullPolicy")
			// Kustomize tags the base's images; the chart names them from its values.
			m["image"], _, _ = strings.Cut(m["image"].(string), ":")
		}
	}
	if claims, ok := spec["volumeClaimTemplates"].([]any); ok {
		for _, cl := range claims {
			delete(get(cl, "metadata").(map[string]any), "labels")
		}
	}
	return c
}

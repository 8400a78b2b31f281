package helmtest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// readsEnv is the environment variables a program's configuration declares: the third argument of
// its flag set's calls, set.String(&c.X, "flag", "ENV", ...), in the files that hold them.
func readsEnv(t *testing.T, files ...string) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`\.(?:String|Duration|Int|Bool|List|Float|Uint|Int64)\(&[^,]+,\s*"[^"]*",\s*"([A-Z][A-Z0-9_]*)"`)
	names := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %v declared in %v: has the flag set's shape changed?", names, files)
	}
	return names
}

// Every variable the chart gives writer-svc and fanout-svc, with every optional part on and with
// an external Redis, is one the program reads: a misspelt name would be ignored without a word.
func TestEnvIsRead(t *testing.T) {
	shared := []string{"pkg/serve/server.go", "pkg/redisconn/redisconn.go"}
	programs := map[string]map[string]bool{
		"writer-svc": readsEnv(t, append([]string{"writer-svc/config.go"}, shared...)...),
		"fanout-svc": readsEnv(t, append([]string{"fanout-svc/config.go"}, shared...)...),
	}
	for _, vals := range [][]string{values("all-on.yaml"), values("external-redis.yaml")} {
		objs := render(t, vals...)
		for prog, reads := range programs {
			dep := objs["Deployment/"+prog]
			var names []string
			for n := range containerEnv(dep) {
				names = append(names, n)
			}
			from, _ := get(dep, "spec", "template", "spec", "containers", "0", "envFrom").([]any)
			for _, ref := range from {
				cm, _ := get(ref, "configMapRef", "name").(string)
				data, _ := get(objs["ConfigMap/"+cm], "data").(map[string]any)
				if data == nil {
					t.Errorf("%s: envFrom ConfigMap %q is not rendered", prog, cm)
				}
				for n := range data {
					names = append(names, n)
				}
			}
			if len(names) < 8 {
				t.Errorf("%s gets only %v", prog, names)
			}
			for _, n := range names {
				if !reads[n] {
					t.Errorf("%s (values %v) gets %s, which it does not read", prog, vals, n)
				}
			}
		}
	}
}

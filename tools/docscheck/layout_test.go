package docscheck

import (
	"strings"
	"testing"
)

// TestReadmeLayoutIsCurrent: README.md's layout section is what the packages' doc comments say
// today; after a package is added, moved or redescribed, `go run ./tools/doclayout -w`.
func TestReadmeLayoutIsCurrent(t *testing.T) {
	root := moduleRoot(t)
	pkgs, err := Packages(root)
	if err != nil {
		t.Fatal(err)
	}
	readme := read(t, root, "README.md")
	want, err := ReplaceLayout(readme, Layout(pkgs))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if want != readme {
		t.Errorf("README.md's layout section is stale: run `go run ./tools/doclayout -w`; it should gain %q and lose %q",
			missing(readme, want), missing(want, readme))
	}
	for _, dir := range []string{"writer-svc", "fanout-svc/internal/hub", "pkg/update", "tools/docscheck"} {
		if !strings.Contains(readme, "| `"+dir+"/` |") {
			t.Errorf("README.md's layout does not list %s", dir)
		}
	}
}

func TestSummaryIsTheFirstClause(t *testing.T) {
	for doc, want := range map[string]string{
		"Package hub is the fan-out engine: it turns one update into a write.\n": "the fan-out engine",
		"Command loadgen measures a deployment. More.":                           "measures a deployment",
		"Package x checks files (y (nested) runs them) without running them.":    "checks files without running them",
		"": "(no doc comment)",
	} {
		if got := summary(doc); got != want {
			t.Errorf("summary(%q) = %q, want %q", doc, got, want)
		}
	}
}

// missing lists the lines of want that have is without.
func missing(have, want string) []string {
	seen := make(map[string]bool)
	for _, l := range strings.Split(have, "\n") {
		seen[l] = true
	}
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !seen[l] {
			out = append(out, l)
		}
	}
	return out
}

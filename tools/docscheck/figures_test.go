package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCitedFiguresEqualBenchmarks: every figure README.md and the docs cite is one
// docs/BENCHMARKS.md measured, at the value it measured, so a benchmark that changes a figure
// fails here until every citation changes with it.
func TestCitedFiguresEqualBenchmarks(t *testing.T) {
	root := moduleRoot(t)
	canonical, err := Canonical(read(t, root, "docs/BENCHMARKS.md"))
	if err != nil {
		t.Fatalf("docs/BENCHMARKS.md: %v", err)
	}
	if len(canonical) == 0 {
		t.Fatal("docs/BENCHMARKS.md marks no figure")
	}
	citing := []string{"README.md", "deploy/README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if rel, _ := filepath.Rel(root, d); rel != filepath.Join("docs", "BENCHMARKS.md") {
			citing = append(citing, filepath.ToSlash(rel))
		}
	}
	cited := 0
	for _, name := range citing {
		text := read(t, root, name)
		figs, err := Figures(text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		cited += len(figs)
		bad, err := Mismatches(name, text, canonical)
		if err != nil {
			t.Error(err)
		}
		for _, m := range bad {
			t.Error(m)
		}
	}
	for _, must := range []string{"README.md", "docs/SCALING.md"} {
		figs, _ := Figures(read(t, root, must))
		if len(figs) == 0 {
			t.Errorf("%s cites no marked figure: mark the figures it takes from docs/BENCHMARKS.md", must)
		}
	}
	t.Logf("%d figures measured, %d citations checked", len(canonical), cited)
}

func TestMismatchesFindsWrongAndUnknownFigures(t *testing.T) {
	canonical, err := Canonical("a <!-- figure: viewer-memory -->605 B<!-- /figure --> b\n" +
		"<!-- figure: connect-cost -->65 µs<!-- /figure -->")
	if err != nil {
		t.Fatal(err)
	}
	doc := "ok <!-- figure: viewer-memory -->605 B<!-- /figure -->\n" +
		"stale <!-- figure: connect-cost -->72 µs<!-- /figure -->\n" +
		"typo <!-- figure: viewer-memroy -->605 B<!-- /figure -->"
	bad, err := Mismatches("x.md", doc, canonical)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], `x.md:2: figure "connect-cost" cites "72 µs"`) ||
		!strings.Contains(bad[1], `x.md:3: figure "viewer-memroy" is not defined`) {
		t.Fatalf("mismatches = %q, want the stale line 2 and the unknown key of line 3", bad)
	}
}

func TestFiguresRefusesUnclosedAndDuplicateMarks(t *testing.T) {
	if _, err := Figures("<!-- figure: a -->1 B"); err == nil {
		t.Error("an unclosed figure marker was accepted")
	}
	if _, err := Figures("<!-- figure: a --> <!-- /figure -->"); err == nil {
		t.Error("a figure without a value was accepted")
	}
	if _, err := Canonical("<!-- figure: a -->1<!-- /figure -->\n<!-- figure: a -->2<!-- /figure -->"); err == nil {
		t.Error("a key measured twice was accepted")
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func read(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

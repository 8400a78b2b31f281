package docscheck

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A figure is marked where it is measured, in docs/BENCHMARKS.md, and wherever it is cited, with
// the same key: <!-- figure: viewer-memory -->605 B<!-- /figure -->. The comments do not render,
// so the reader sees the value only.
var figureMark = regexp.MustCompile(`<!-- figure: ([a-z0-9-]+) -->(.*?)<!-- /figure -->`)

// Figure is one marked value in a document.
type Figure struct {
	Key   string
	Value string
	Line  int // 1-based, for messages
}

// Figures returns the marked figures of a document, in order. A marker that is opened and not
// closed on its line is an error, so a typo cannot hide a figure from the check.
func Figures(text string) ([]Figure, error) {
	var figs []Figure
	for i, line := range strings.Split(text, "\n") {
		opened := strings.Count(line, "<!-- figure:")
		matches := figureMark.FindAllStringSubmatch(line, -1)
		if opened != len(matches) {
			return nil, fmt.Errorf("line %d: a figure marker without its <!-- /figure --> on the same line", i+1)
		}
		for _, m := range matches {
			v := strings.TrimSpace(m[2])
			if v == "" {
				return nil, fmt.Errorf("line %d: figure %q has no value", i+1, m[1])
			}
			figs = append(figs, Figure{Key: m[1], Value: v, Line: i + 1})
		}
	}
	return figs, nil
}

// Canonical indexes the figures of the document that measures them; each key is defined once.
func Canonical(text string) (map[string]Figure, error) {
	figs, err := Figures(text)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]Figure, len(figs))
	for _, f := range figs {
		if prev, ok := byKey[f.Key]; ok {
			return nil, fmt.Errorf("figure %q defined twice, lines %d and %d", f.Key, prev.Line, f.Line)
		}
		byKey[f.Key] = f
	}
	return byKey, nil
}

// Mismatches lists, one message each, the citations in a document whose key the canonical
// figures do not define or whose value differs from the canonical one.
func Mismatches(name, text string, canonical map[string]Figure) ([]string, error) {
	figs, err := Figures(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out []string
	for _, f := range figs {
		c, ok := canonical[f.Key]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s:%d: figure %q is not defined in docs/BENCHMARKS.md (known: %s)",
				name, f.Line, f.Key, strings.Join(keys(canonical), ", ")))
		case c.Value != f.Value:
			out = append(out, fmt.Sprintf("%s:%d: figure %q cites %q, docs/BENCHMARKS.md:%d measured %q",
				name, f.Line, f.Key, f.Value, c.Line, c.Value))
		}
	}
	return out, nil
}

func keys(m map[string]Figure) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

package docscheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The layout section of README.md lies between these two lines, written by Layout.
const (
	LayoutBegin = "<!-- layout: generated from the packages' doc comments by `go run ./tools/doclayout -w`; do not edit -->"
	LayoutEnd   = "<!-- /layout -->"
)

// Package is one directory of Go code and the first sentence of its doc comment.
type Package struct {
	Dir     string // slash-separated, relative to the module root
	Summary string
}

// Packages walks the module under root and returns every directory with non-test Go files, in
// path order, each with the summary of its doc comment. Hidden directories, testdata and
// node_modules are not code of the module.
func Packages(root string) ([]Package, error) {
	var pkgs []Package
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		doc, ok, err := packageDoc(path)
		if err != nil || !ok {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkgs = append(pkgs, Package{Dir: filepath.ToSlash(rel), Summary: summary(doc)})
		return nil
	})
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Dir < pkgs[j].Dir })
	return pkgs, err
}

// packageDoc parses the package clauses of a directory's non-test files (whatever their build
// constraints: a Linux-only package is still part of the layout) and returns the doc comment,
// preferring doc.go's. ok is false for a directory without such files.
func packageDoc(dir string) (doc string, ok bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", false, err
		}
		if ignored(f) {
			continue
		}
		ok = true
		if f.Doc != nil && (doc == "" || n == "doc.go") {
			doc = f.Doc.Text()
		}
	}
	return doc, ok, nil
}

// ignored reports a file built by no configuration (`//go:build ignore`), such as a generator.
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}

// summary is a doc comment's first clause without its "Package x" or "Command x" opening: the
// package's one job in a line.
func summary(doc string) string {
	s := withoutAsides(strings.Join(strings.Fields(doc), " "))
	for _, stop := range []string{". ", ": ", "; "} {
		if i := strings.Index(s, stop); i > 0 {
			s = s[:i]
		}
	}
	s = strings.TrimSuffix(s, ".")
	s = strings.TrimSuffix(s, ":")
	if f := strings.Fields(s); len(f) > 2 && (f[0] == "Package" || f[0] == "Command") {
		s = strings.Join(f[2:], " ")
		for _, verb := range []string{"is ", "are "} {
			s = strings.TrimPrefix(s, verb)
		}
	}
	if s == "" {
		return "(no doc comment)"
	}
	return s
}

// withoutAsides drops the parenthesised asides of a sentence, nested ones included.
func withoutAsides(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return strings.ReplaceAll(strings.Join(strings.Fields(b.String()), " "), " ,", ",")
}

// Layout renders the packages as README.md's layout block, markers included.
func Layout(pkgs []Package) string {
	var b strings.Builder
	b.WriteString(LayoutBegin + "\n\n")
	b.WriteString("| directory | its one job |\n|---|---|\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "| `%s/` | %s |\n", p.Dir, strings.ReplaceAll(p.Summary, "|", `\|`))
	}
	b.WriteString("\n" + LayoutEnd)
	return b.String()
}

// ReplaceLayout returns text with its layout block replaced by block.
func ReplaceLayout(text, block string) (string, error) {
	i := strings.Index(text, LayoutBegin)
	j := strings.Index(text, LayoutEnd)
	if i < 0 || j < i {
		return "", errors.New("no layout block (" + LayoutBegin + " ... " + LayoutEnd + ")")
	}
	return text[:i] + block + text[j+len(LayoutEnd):], nil
}

// ModuleRoot finds the directory holding go.mod, from dir upwards.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

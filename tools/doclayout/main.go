// Command doclayout writes README.md's layout section from the packages' doc comments: with -w
// it rewrites the section in place, without it prints the section. The docscheck tests fail
// while the section is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/likes/likes/tools/docscheck"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "doclayout:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("doclayout", flag.ContinueOnError)
	write := fs.Bool("w", false, "rewrite README.md's layout section instead of printing it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := docscheck.ModuleRoot(".")
	if err != nil {
		return err
	}
	pkgs, err := docscheck.Packages(root)
	if err != nil {
		return err
	}
	block := docscheck.Layout(pkgs)
	if !*write {
		fmt.Println(block)
		return nil
	}
	path := filepath.Join(root, "README.md")
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := docscheck.ReplaceLayout(string(old), block)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(updated), 0o644)
}

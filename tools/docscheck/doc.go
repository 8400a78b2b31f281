// Package docscheck keeps the docs honest against the repository: the figures README.md and
// docs/ cite must equal the ones docs/BENCHMARKS.md measured, and README.md's layout section
// must list the packages as their doc comments describe them today. Its tests run in `make
// test`; `go run ./tools/doclayout -w` rewrites the layout section.
package docscheck

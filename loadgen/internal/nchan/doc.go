// Package nchan is what the side-by-side benchmark (scripts/hundredk.sh, docs/BENCHMARKS.md) needs
// to measure Nchan as it measures fanout-svc: a bridge that hands the writer's Redis messages to
// Nchan's publisher, and an exporter of a process tree's CPU and memory as a node's /metrics.
package nchan

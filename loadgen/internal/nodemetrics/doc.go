// Package nodemetrics reads a fanout node's /metrics: the figures a ramp reports per node (CPU,
// resident memory, viewers) come from the node itself, because only the node knows what its
// connections cost it. The metric names are the contract with fanout-svc.
package nodemetrics

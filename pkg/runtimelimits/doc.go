// Package runtimelimits sizes the Go runtime of a service to the container it runs in: its
// GOMAXPROCS to the CPU quota and its soft memory limit to the memory limit. Both services call
// Apply at start, before they size anything on GOMAXPROCS (fanout-svc's event loops).
package runtimelimits

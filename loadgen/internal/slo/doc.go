// Package slo is the service level objective a ramp judges each phase by: "p99<=100ms,
// delivery>=99.9%, converged>=100%, errors=0". A phase that meets every term is clean; `loadgen
// ramp --until-break` reports the largest clean load as the capacity.
package slo

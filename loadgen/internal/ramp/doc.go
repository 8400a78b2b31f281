// Package ramp runs the load generator's ramp: phase by phase it brings the viewers up to the next
// connection count (spread over worker processes), sends likes for a warmup and a measured window,
// stops, checks that every viewer converged on the final counts, and computes the phase's figures
// from the workers' tallies, the writer's answers and each fanout node's /metrics. With React the
// load is an audience's reactions, and a phase is judged by what the nodes displayed (display.go).
package ramp

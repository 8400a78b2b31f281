// Package likes drives writer-svc: closed-loop writers (each sends its next like when the last is
// answered, as in the original benchmark) or an open loop at a fixed rate (for latency under a
// known load). Every like carries a fresh user id, so every like is counted and published, and
// its answer's count identifies it.
package likes

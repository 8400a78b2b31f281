// Package worker holds SSE viewers for the load generator. One process may hold at most 20,000
// open files here, so `loadgen ramp` starts as many `loadgen worker` processes as a phase needs and
// drives each over its stdin and stdout with JSON lines (Request in, Reply out); Client is the
// coordinator's end of that pipe. A viewer is one goroutine with a small read buffer that decodes
// its stream without allocating and records each event into shared, lock-free counters: a tally
// of deliveries per post and count, and a latency histogram.
package worker

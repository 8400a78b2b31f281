// Command loadgen measures a likes deployment the way its users need: `loadgen ramp` holds SSE
// viewers on the fanout nodes and likes on the writer, phase by phase at growing connection counts,
// and reports for each phase connections, likes per second, events delivered per second, delivery
// and convergence, delivery latency, and each node's CPU and memory per connection, so that one can
// see where a deployment stops keeping up, scale it, and run again. `loadgen ramp --react` is a
// room reacting instead: an audience taps emoji at a total rate, each person at most once per
// interval, and each phase reports what every viewer's display got.
//
// One process may hold 20,000 open files here, so viewers live in worker processes (`loadgen
// worker`, this binary re-executed, driven over stdin and stdout); the generator watches its own
// CPU and says when it, rather than the system under test, may be the limit.
package main

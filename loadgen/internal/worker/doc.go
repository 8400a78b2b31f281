// Package worker holds SSE viewers for the load generator. One process may hold at most 20,000
// open files here, so `loadgen ramp` starts as many `loadgen worker` processes as a phase needs and
// drives each over its stdin and stdout with JSON lines (Request in, Reply out); Client is the
// coordinator's end of that pipe. Viewers are read by one epoll loop per CPU (level-triggered, one
// read(2) per ready socket into a large shared buffer, no goroutine per viewer): measured against
// a goroutine per connection, that drops the read that ends in EAGAIN and the scheduler work per
// event, about 15% of the generator's CPU at 100K events/s. Each viewer decodes its stream without
// allocating and records each event into shared, lock-free counters: a tally of deliveries per
// post and count, and a latency histogram.
package worker

// Package tally counts, per post, how many viewers received each count value. Every like on a
// post produces the next count, so the count identifies the like: the generator can later ask how
// many deliveries the likes of any count range got, without knowing that range while events
// arrive. That is what keeps warmup and tail effects out of the delivery figure.
package tally

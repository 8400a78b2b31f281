package hub

import (
	"sync/atomic"
	"time"
)

// DeliveryBuckets are the upper bounds, in seconds, of the delivery histogram: from a millisecond
// (a quiet node on the same host as Redis) to five seconds (a node far behind), with the
// objective's 100 ms among them.
var DeliveryBuckets = [...]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// deliveryBucketMicros are DeliveryBuckets in microseconds, as the loops compare them.
var deliveryBucketMicros = func() [len(DeliveryBuckets)]int64 {
	var us [len(DeliveryBuckets)]int64
	for i, b := range DeliveryBuckets {
		us[i] = int64(b * 1e6)
	}
	return us
}()

// Delivery is how long updates took from Redis to this node's viewers: for each post in a loop's
// write pass, the wall time at the pass less the version of the pass's oldest frame (the Redis
// clock when the change was stored, update.Update.TS). One sample per post per write pass, not per
// viewer. It includes the publish, the pub/sub hop, the node's queue and flush window, and the
// pass itself; the node's and Redis's clocks must agree (one host, or NTP across hosts: a
// negative difference counts as zero).
type Delivery struct {
	buckets   [len(DeliveryBuckets) + 1]atomic.Uint64 // not cumulative; the last is +Inf
	sumMicros atomic.Int64
}

// Snapshot returns the histogram as Prometheus wants it: the count, the sum in seconds, and the
// cumulative count at each of DeliveryBuckets.
func (d *Delivery) Snapshot() (count uint64, sum float64, cumulative map[float64]uint64) {
	cumulative = make(map[float64]uint64, len(DeliveryBuckets))
	for i, b := range DeliveryBuckets {
		count += d.buckets[i].Load()
		cumulative[b] = count
	}
	count += d.buckets[len(DeliveryBuckets)].Load()
	return count, float64(d.sumMicros.Load()) / 1e6, cumulative
}

// deliveryTally is a loop's samples since its last flush into Stats.
type deliveryTally struct {
	buckets   [len(DeliveryBuckets) + 1]int64
	sumMicros int64
}

func (t *deliveryTally) observe(micros int64) {
	micros = max(micros, 0)
	i := 0
	for i < len(deliveryBucketMicros) && micros > deliveryBucketMicros[i] {
		i++
	}
	t.buckets[i]++
	t.sumMicros += micros
}

func (t *deliveryTally) flushTo(d *Delivery) {
	for i, n := range t.buckets {
		if n != 0 {
			d.buckets[i].Add(uint64(n))
		}
	}
	d.sumMicros.Add(t.sumMicros)
}

// wallMicros is the wall clock in unix microseconds, the unit of an update's version.
func wallMicros() int64 { return time.Now().UnixMicro() }

// Package hist is a fixed-bucket latency histogram: recording a value is one atomic add into a
// preallocated array, so a load generator can record every delivered event without allocating or
// locking, and histograms from many goroutines and processes merge by adding buckets.
package hist

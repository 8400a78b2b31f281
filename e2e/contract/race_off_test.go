//go:build !race

package contract

// raceEnabled reports whether this test binary runs under the race detector.
const raceEnabled = false

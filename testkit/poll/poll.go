// Package poll is how tests wait for something that happens on another goroutine or in another
// process: check a condition again and again until it holds or a deadline passes, never sleep and
// hope (the shape of nats-server's checkFor). Every test package of likes uses this one copy.
package poll

import (
	"errors"
	"testing"
	"time"
)

// The pause between two checks starts at firstPause and doubles up to MaxPause: a condition that
// holds within a millisecond or two is seen at once, and a long wait costs a busy machine (and
// the process that answers the check, such as a status endpoint) at most 50 checks a second.
const (
	firstPause = time.Millisecond
	MaxPause   = 20 * time.Millisecond
)

// For calls cond until it returns nil and then returns nil, or returns cond's last error once
// within has passed. cond is called at least once, on the caller's goroutine.
func For(within time.Duration, cond func() error) error {
	deadline := time.Now().Add(within)
	pause := firstPause
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, MaxPause)
	}
}

// Check waits up to within for cond to return nil, and otherwise fails t with cond's last error,
// so the failure says what the state was rather than only that it was wrong.
func Check(t testing.TB, within time.Duration, cond func() error) {
	t.Helper()
	if err := For(within, cond); err != nil {
		t.Fatalf("timed out after %v: %v", within, err)
	}
}

// Until waits up to within for cond to return true, and otherwise fails t naming what it waited
// for.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	err := For(within, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

var errNotYet = errors.New("condition not met")

package clienttest

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds or timeout passes, then fails the test naming what.
func WaitFor(t testing.TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	Await(t, timeout, cond, func() string { return what })
}

// Await is WaitFor with a description made when it fails, so that it can say what was seen last.
func Await(t testing.TB, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

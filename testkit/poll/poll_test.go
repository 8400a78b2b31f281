package poll

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestForReturnsOnceCondHolds(t *testing.T) {
	calls := 0
	err := For(time.Minute, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("For = %v after %d calls; want nil after 3", err, calls)
	}
}

func TestForReturnsLastErrorAfterDeadline(t *testing.T) {
	calls := 0
	err := For(0, func() error {
		calls++
		return fmt.Errorf("still %d", calls)
	})
	if err == nil || err.Error() != "still 1" || calls != 1 {
		t.Errorf("For(0) = %v after %d calls; want the first call's error after 1 call", err, calls)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends the goroutine, as the
// real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs f with a fatalRecorder on a goroutine of its own and returns what it failed with.
func failure(t *testing.T, f func(testing.TB)) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { // exits when f returns or fails
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestUntilFailsNamingWhat(t *testing.T) {
	msg := failure(t, func(tb testing.TB) { Until(tb, 0, "the moon", func() bool { return false }) })
	if !strings.Contains(msg, "waiting for the moon") {
		t.Errorf("failure = %q; want it to name what was awaited", msg)
	}
	if msg := failure(t, func(tb testing.TB) { Until(tb, 0, "x", func() bool { return true }) }); msg != "" {
		t.Errorf("failure = %q for a condition that holds; want none", msg)
	}
}

func TestCheckFailsWithLastError(t *testing.T) {
	msg := failure(t, func(tb testing.TB) { Check(tb, 0, func() error { return errors.New("3 of 4 viewers") }) })
	if !strings.Contains(msg, "3 of 4 viewers") {
		t.Errorf("failure = %q; want the condition's last error", msg)
	}
}

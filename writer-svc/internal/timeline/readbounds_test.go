package timeline

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// TestQueriesAtTheEdgesAreServed: the extremes of each range are served, within the command cap.
func TestQueriesAtTheEdgesAreServed(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	var sent commandCounter
	rdb.AddHook(&sent)
	h := routes(rdb, time.Unix(1764950000, 0))
	for _, give := range []string{
		"from=0&to=1",
		"from=1970-01-01T00:00:00Z&to=21600&step=21600",
		"from=9999-12-31T18:00:00Z&to=9999-12-31T23:59:59Z&step=6h",
		"from=253402279199&to=253402300799&step=3", // MaxSpan, mid-minute: MaxMinutes minutes
		"to=9999-12-31T23:59:59Z",
		"step=1s&format=csv",
	} {
		t.Run(give, func(t *testing.T) {
			sent.reset()
			rec := serveWithin(t, h, "/posts/talk/timeline?"+give)
			if rec == nil {
				t.FailNow()
			}
			if rec.Code != http.StatusOK {
				t.Errorf("got %d %.200s; want 200", rec.Code, rec.Body.String())
			}
			if n := sent.count(); n < 1 || n > MaxCommands(1) {
				t.Errorf("%d Redis commands; want 1 to %d", n, MaxCommands(1))
			}
		})
	}
}

// TestReadIsBoundedWhateverItIsGiven: Read itself refuses a range out of bounds or past the
// command cap with an error and no Redis command, whatever its caller passed, and its largest
// read (MaxSpan starting mid-minute) sends exactly MaxCommands.
func TestReadIsBoundedWhateverItIsGiven(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	var sent commandCounter
	rdb.AddHook(&sent)
	kinds := []string{"clap", "wow", "boo"}
	rd := NewReader(rdb, keys, kinds)
	const maxInt = int64(^uint64(0) >> 1)
	span := int64(MaxSpan / time.Second)
	for _, tt := range []struct{ from, to, step int64 }{
		{0, maxInt, 1},
		{maxInt - 1800, maxInt, 1},
		{-1, 10, 1},
		{-maxInt - 1, 0, 1},
		{10, 10, 1},
		{10, 20, 0},
		{10, 20, -maxInt - 1},
		{0, span + 61, 1},       // 362 minutes
		{30, 30 + span + 60, 1}, // 362 minutes too
		{MaxTime - 10, MaxTime + 1, 1},
	} {
		sent.reset()
		done := make(chan error, 1)
		go func() { _, err := rd.Read(context.Background(), "talk", tt.from, tt.to, tt.step); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("Read(%d, %d, %d): no error; want one", tt.from, tt.to, tt.step)
			}
		case <-time.After(answerWithin):
			t.Fatalf("Read(%d, %d, %d) still running after %v", tt.from, tt.to, tt.step, answerWithin)
		}
		if n := sent.count(); n != 0 {
			t.Errorf("Read(%d, %d, %d): %d Redis commands; want none", tt.from, tt.to, tt.step, n)
		}
	}

	sent.reset()
	tl, err := rd.Read(context.Background(), "talk", 30, 30+span, maxInt)
	if err != nil || len(tl.Series[Likes]) != 1 {
		t.Fatalf("the largest read, one step of int64's end: %v, %d steps; want 1", err, len(tl.Series[Likes]))
	}
	if n, want := sent.count(), MaxCommands(len(kinds)); n != want || want != 361*5 {
		t.Errorf("the largest read sent %d commands; want MaxCommands %d = 361 minutes x 5 series", n, want)
	}
}

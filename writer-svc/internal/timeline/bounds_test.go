package timeline

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/redistest"
)

// answerWithin is how long a request out of range may take to be refused: a parse, no Redis. The
// code before the bounds never answered `to=9223372036854775807` (issue 49: its reader's minute
// loop overflowed and grew a pipeline until the process died), so the test must not wait on it.
const answerWithin = 5 * time.Second

// TestOutOfRangeQueriesAreRefusedWithoutRedis: every query out of its documented range (int64
// extremes, negatives, zero and huge steps, sub-second steps, RFC 3339 times outside years 1970
// to 9999, repeated parameters, Unicode digits, a value of 100 KB) is a 400 with a JSON error that
// names the allowed range, answered at once, and the process sends Redis nothing for it. Before
// the bounds, the first case never answered: the test fails on it after answerWithin.
func TestOutOfRangeQueriesAreRefusedWithoutRedis(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	var sent commandCounter
	rdb.AddHook(&sent)
	h := routes(rdb, time.Unix(1764950000, 0))
	const timeRange = "from 0 to 253402300799"
	const stepRange = "from 1 to 21600"
	for _, tt := range []struct{ give, want string }{
		{"to=9223372036854775807", timeRange},
		{"from=-1", timeRange},
		{"to=9223372036854775807&from=9223372036854774000", timeRange},
		{"from=-9223372036854775808&to=10", timeRange},
		{"to=99999999999999999999", timeRange},
		{"to=253402300800", timeRange},
		{"from=253402300799", "not before"},
		{"to=10000-01-01T00:00:00Z", timeRange},
		{"to=9999-12-31T23:59:59-23:59", timeRange},
		{"from=0001-01-01T00:00:00Z", timeRange},
		{"from=1969-12-31T23:59:59Z", timeRange},
		{"from=%D9%A3", timeRange}, // an Arabic-Indic three
		{"to=" + strings.Repeat("9", 100_000), timeRange},
		{"from=0&to=21601", "at most 21600 s"},
		{"from=253402279200&to=253402300799&step=1", "at most 10000"},
		{"step=0", stepRange},
		{"step=-1", stepRange},
		{"step=9223372036854775807", stepRange},
		{"step=2562047h", stepRange},
		{"step=21601", stepRange},
		{"step=1ns", stepRange},
		{"step=1.5s", stepRange},
		{"step=-9223372036854775808ns", stepRange},
		{"to=100&to=200", "to given 2 times"},
		{"from=1&from=1", "from given 2 times"},
		{"step=1&step=2&step=3", "step given 3 times"},
		{"format=json&format=csv", "format given 2 times"},
		{"format=JSON", "want json or csv"},
	} {
		hung := false
		t.Run(tt.give[:min(len(tt.give), 48)], func(t *testing.T) {
			sent.reset()
			rec := serveWithin(t, h, "/posts/talk/timeline?"+tt.give)
			if hung = rec == nil; hung {
				return
			}
			var e struct{ Error string }
			if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, tt.want) {
				t.Errorf("got %d %.200s; want 400 with a JSON error saying %q", rec.Code, rec.Body.String(), tt.want)
			}
			if len(e.Error) > 400 {
				t.Errorf("error of %d bytes; want the value cut short", len(e.Error))
			}
			if n := sent.count(); n != 0 {
				t.Errorf("%d Redis commands sent; want none", n)
			}
		})
		if hung { // its handler still runs, and may grow without bound: no more on top of it
			t.Fatalf("stopped after %s", tt.give)
		}
	}
}

// routes is the timeline route with the real handler over rdb, the clock stopped at now.
func routes(rdb redis.UniversalClient, now time.Time) http.Handler {
	h := NewHandler(Options{Reader: NewReader(rdb, keys, []string{"clap"}), Timeout: 2 * time.Second, Now: func() time.Time { return now }})
	r := chi.NewRouter()
	h.Routes(r)
	return r
}

// serveWithin serves target on h and returns its answer, or fails the test and returns nil when
// none comes within answerWithin.
// It calls the handler directly rather than over loopback: a handler that never returns would
// keep an httptest.Server's Close waiting forever, and the test must fail, not hang. Such a
// handler's goroutine is left behind (the test binary ends on the failure); one that answers
// ends with its answer.
func serveWithin(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	done := make(chan *httptest.ResponseRecorder, 1)
	req := httptest.NewRequest(http.MethodGet, target, nil)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		done <- rec
	}()
	select {
	case rec := <-done:
		return rec
	case <-time.After(answerWithin):
		t.Errorf("GET %.100s: no answer within %v", target, answerWithin)
		return nil
	}
}

// commandCounter is a go-redis hook that counts the commands a client sends, alone or in a
// pipeline, besides those go-redis sends by itself to set up a connection.
type commandCounter struct {
	mu sync.Mutex
	n  int64
}

func (c *commandCounter) add(cmds []redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		switch cmd.Name() {
		case "hello", "client", "auth", "select", "ping":
		default:
			c.n++
		}
	}
}

func (c *commandCounter) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *commandCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = 0
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds)
		return next(ctx, cmds)
	}
}

package likeapi

import (
	"errors"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestOutageLogsOncePerOutage: any number of failed requests log one warning when the outage
// begins and one line when a success ends it, with how many failed; the next outage logs anew.
func TestOutageLogsOncePerOutage(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	o := &outage{log: zap.New(core)}
	r := httptest.NewRequest("POST", "/like/p", nil)
	o.ok() // no outage: nothing to log
	for range 5 {
		o.fail(r, errors.New("dial tcp: connection refused"))
	}
	o.ok()
	o.ok()
	o.fail(r, errors.New("i/o timeout"))
	o.ok()

	want := []struct {
		msg    string
		failed int64 // failed_requests, for a recovery
	}{
		{"storage failing: answering 503 until it recovers", 0},
		{"storage recovered", 5},
		{"storage failing: answering 503 until it recovers", 0},
		{"storage recovered", 1},
	}
	got := logs.All()
	if len(got) != len(want) {
		t.Fatalf("%d log lines %v; want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Message != w.msg {
			t.Errorf("line %d: %q; want %q", i, got[i].Message, w.msg)
		}
		if n, _ := got[i].ContextMap()["failed_requests"].(int64); w.failed != 0 && n != w.failed {
			t.Errorf("line %d: failed_requests %d; want %d", i, n, w.failed)
		}
	}
	if got[0].ContextMap()["error"] != "dial tcp: connection refused" {
		t.Errorf("first line's error %v; want the first failure's", got[0].ContextMap()["error"])
	}
}

package e2e

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestLoadgenNodeLoss: loadgen ramp --kill-cmd kills one of three nodes (SIGKILL, as a crash) a
// second into the window. Its 90 viewers (viewer i's node is i / posts mod nodes) reconnect at once to the other two, which admit them
// all; every viewer, moved or not, converges on the final counts, and the phase says how long
// until the last moved viewer was current.
func TestLoadgenNodeLoss(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL)
	a, b, c := StartFanout(t, redis.URL), StartFanout(t, redis.URL), StartFanout(t, redis.URL)
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", a.URL+","+b.URL+","+c.URL, "--identity", "header",
		"--conns", "270", "--posts", "3", "--rate", "30", "--warmup", "1s", "--window", "4s",
		"--kill-cmd", "kill -9 "+strconv.Itoa(c.PID(t)), "--kill-after", "1s", "--json")
	ph := onePhase(t, out)
	var storm struct {
		Storm *struct {
			Moved     int      `json:"moved"`
			Admitted  int      `json:"admitted"`
			Refused   int      `json:"refused"`
			Failed    int      `json:"failed"`
			CurrentMs *float64 `json:"current_ms"`
		} `json:"storm"`
	}
	var res struct {
		Phases []json.RawMessage `json:"phases"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Phases) != 1 || json.Unmarshal(res.Phases[0], &storm) != nil {
		t.Fatalf("decode JSON: %v\n%s", err, out)
	}
	s := storm.Storm
	if s == nil {
		t.Fatalf("no storm figures\n%s", out)
	}
	if !c.Exited() {
		t.Errorf("the killed node still runs")
	}
	if s.Moved != 90 || s.Admitted != 90 || s.Refused != 0 || s.Failed != 0 || s.CurrentMs == nil {
		t.Errorf("storm %+v; want the lost node's 90 viewers moved and admitted, none refused or failed, and a time until current\n%s", *s, out)
	}
	if ph.Open != 270 || ph.Convergence != 100 || ph.LikeErrors != 0 || ph.Samples == 0 {
		t.Errorf("open %d, convergence %v%%, like errors %d, latency samples %d; want 270, 100%%, 0 and the stayers' latencies\n%s",
			ph.Open, ph.Convergence, ph.LikeErrors, ph.Samples, out)
	}
	// A moved viewer misses what came while it moved, and the snapshot it starts from is no
	// second delivery of a count it had.
	if ph.Delivery > 100 || ph.Delivery < 90 {
		t.Errorf("delivery %v%%; want at most 100%% (no count counted twice) and at least 90%%\n%s", ph.Delivery, out)
	}
}

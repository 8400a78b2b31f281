package e2e

import (
	"encoding/json"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestLoadgenOneLikeAndWriteProbe: loadgen ramp --one-like, after its phase, likes the first post
// once with every viewer still open: all 100 of that post's viewers (of 200 on two nodes) get the
// frame, every viewer of both posts is current, and the report says when the last one had it.
// --write-probe sends 100 likes/s to posts nobody watches before any viewer connects and beside
// the phase: both windows acknowledge them all and read the writer's CPU per like.
func TestLoadgenOneLikeAndWriteProbe(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL)
	a, b := StartFanout(t, redis.URL), StartFanout(t, redis.URL)
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", a.URL+","+b.URL, "--identity", "header",
		"--conns", "200", "--posts", "2", "--rate", "20", "--warmup", "1s", "--window", "2s", "--one-like", "--write-probe", "100", "--json")
	var res struct {
		OneLike *struct {
			Viewers       int      `json:"viewers"`
			Delivered     int64    `json:"delivered"`
			Converged     int      `json:"converged"`
			ConvergeTotal int      `json:"converge_total"`
			AckMs         *float64 `json:"ack_ms"`
			P50Ms         *float64 `json:"p50_ms"`
			LastMs        *float64 `json:"last_ms"`
			Error         string   `json:"error"`
		} `json:"one_like"`
		Alone  *probeFigures `json:"write_probe_alone"`
		Phases []struct {
			Probe *probeFigures `json:"write_probe"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode JSON: %v\n%s", err, out)
	}
	o := res.OneLike
	if o == nil {
		t.Fatalf("no one_like figures\n%s", out)
	}
	if o.Error != "" || o.Viewers != 100 || o.Delivered != 100 || o.Converged != 200 || o.ConvergeTotal != 200 {
		t.Errorf("one like %+v; want 100 viewers of the post, 100 deliveries, all 200 viewers current, no error\n%s", *o, out)
	}
	if o.AckMs == nil || o.P50Ms == nil || o.LastMs == nil || *o.LastMs <= 0 || *o.P50Ms > *o.LastMs {
		t.Errorf("ack %v, p50 %v, last %v ms; want all three, the last positive and at least the p50\n%s", o.AckMs, o.P50Ms, o.LastMs, out)
	}
	if len(res.Phases) != 1 {
		t.Fatalf("%d phases, want 1\n%s", len(res.Phases), out)
	}
	for name, p := range map[string]*probeFigures{"alone": res.Alone, "beside the phase": res.Phases[0].Probe} {
		// 100 likes/s offered over a 2 s window: 200, give or take the window's edges.
		if p == nil || p.LikesPerSec < 90 || p.LikesPerSec > 110 || p.Errors != 0 || p.PerCPUSec == nil || *p.PerCPUSec <= 0 {
			t.Errorf("write probe %s: %+v; want about 100 likes/s, no error, and likes per writer CPU-second\n%s", name, p, out)
		}
	}
}

// probeFigures are the figures of loadgen's write probe that the test reads.
type probeFigures struct {
	LikesPerSec float64  `json:"likes_per_sec"`
	Errors      int64    `json:"errors"`
	PerCPUSec   *float64 `json:"likes_per_writer_cpu_sec"`
}

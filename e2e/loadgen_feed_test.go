package e2e

import (
	"encoding/json"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestLoadgenFeed runs the ramp with feed viewers (each follows 20 of 25 posts on one
// /sse?posts= stream) over two nodes: every like must reach every viewer following its post,
// every viewer must converge on all 20 of its posts, and each post has 20/25 of the viewers.
func TestLoadgenFeed(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL)
	nodeA := StartFanout(t, redis.URL)
	nodeB := StartFanout(t, redis.URL)
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", nodeA.URL+","+nodeB.URL,
		"--conns", "100", "--posts", "25", "--feed", "20", "--rate", "25", "--warmup", "500ms", "--window", "2s",
		"--redis", redis.Addr, "--json")
	var res struct {
		Feed      int      `json:"feed"`
		RedisIdle *float64 `json:"redis_idle_cpu_pct"`
		Phases    []struct {
			Open        int      `json:"conns_open"`
			Delivery    float64  `json:"delivery_pct"`
			Convergence float64  `json:"convergence_pct"`
			Converged   int      `json:"converged"`
			Expected    int64    `json:"events_expected"`
			RedisCPU    *float64 `json:"redis_cpu_pct"`
			RedisUS     *float64 `json:"redis_us_per_like"`
			Posts       []struct {
				Viewers int `json:"viewers"`
			} `json:"posts"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Phases) != 1 {
		t.Fatalf("decode JSON: %v (%d phases)\n%s", err, len(res.Phases), out)
	}
	ph := res.Phases[0]
	if res.Feed != 20 || ph.Open != 100 || ph.Delivery != 100 || ph.Convergence != 100 || ph.Converged != 100 {
		t.Fatalf("feed %d, open %d, delivery %v%%, convergence %v%% (%d); want feed 20, 100 open, 100%%, 100%%",
			res.Feed, ph.Open, ph.Delivery, ph.Convergence, ph.Converged)
	}
	if len(ph.Posts) != 25 {
		t.Fatalf("got %d posts; want 25", len(ph.Posts))
	}
	for i, p := range ph.Posts {
		if p.Viewers != 80 {
			t.Errorf("post %d has %d viewers; want 80 (100 viewers x 20 posts / 25)", i, p.Viewers)
		}
	}
	// 25 likes/s over 25 posts for 2 s, each due to 80 viewers.
	if ph.Expected < 25*80 {
		t.Errorf("events expected %d; want at least a second of likes x 80 viewers", ph.Expected)
	}
	if ph.RedisCPU == nil || *ph.RedisCPU <= 0 {
		t.Errorf("redis CPU %v; want a figure from INFO cpu", ph.RedisCPU)
	}
	if res.RedisIdle == nil || *res.RedisIdle < 0 || ph.RedisUS == nil || *ph.RedisUS < 0 {
		t.Errorf("redis idle CPU and CPU per like missing or negative; want both measured (the idle second before the load, and the phase's CPU less it)\n%s", out)
	}
}

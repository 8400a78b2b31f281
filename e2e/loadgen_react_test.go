package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// rampPhase is what the reactions and display tests read of a ramp's phase.
type rampPhase struct {
	Open        int      `json:"conns_open"`
	LikesPerSec float64  `json:"likes_per_sec"`
	LikeErrors  int64    `json:"like_errors"`
	Delivery    float64  `json:"delivery_pct"`
	Convergence float64  `json:"convergence_pct"`
	Updates     float64  `json:"updates_per_viewer_per_sec"`
	Samples     int64    `json:"latency_samples"`
	P95         *float64 `json:"latency_p95_ms"`
	Notes       []string `json:"notes"`
	Reactions   *struct {
		Audience int     `json:"audience"`
		Acked    int64   `json:"acked"`
		Updates  float64 `json:"updates_per_sec"`
		Display  float64 `json:"display_updates_per_viewer_per_sec"`
		Sampled  int     `json:"sampled_viewers"`
		Missed   int64   `json:"missed"`
	} `json:"reactions"`
}

func onePhase(t *testing.T, out []byte) rampPhase {
	t.Helper()
	var res struct {
		Mode   string      `json:"mode"`
		Phases []rampPhase `json:"phases"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Phases) != 1 {
		t.Fatalf("decode JSON: %v (%d phases)\n%s", err, len(res.Phases), out)
	}
	return res.Phases[0]
}

// TestLoadgenReactions: loadgen ramp --react is a room of 100 people reacting at its ceiling
// (each once per REACTION_INTERVAL, 1 s here, so 100 reactions/s) on one post, on a node whose
// display budget shows that post 5 times a second (500 frames/s over 100 viewers). Every reaction
// is acknowledged, none refused by a person's gate, every viewer's counts reach the stored totals,
// every viewer gets every frame its node displayed, at about the display rate, and every
// reaction reaches every sampled viewer.
func TestLoadgenReactions(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL, "REACTION_INTERVAL=1s")
	node := StartFanout(t, redis.URL, "DISPLAY_BUDGET=500", "DISPLAY_MIN_RATE=1")
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", node.URL, "--identity", "header",
		"--react", "--react-interval", "1s", "--conns", "100", "--posts", "1", "--warmup", "1s", "--window", "3s",
		"--latency-sample", "10", "--json")
	ph := onePhase(t, out)
	rx := ph.Reactions
	if rx == nil {
		t.Fatalf("no reactions figures\n%s", out)
	}
	if ph.Open != 100 || rx.Audience != 100 || ph.LikeErrors != 0 || rx.Acked < 200 {
		t.Errorf("open %d, audience %d, errors %d, acked %d; want 100 viewers and people, no error, about 300 acked (100/s for 3 s)\n%s",
			ph.Open, rx.Audience, ph.LikeErrors, rx.Acked, out)
	}
	if ph.Convergence != 100 || ph.Delivery < 99 || rx.Missed != 0 {
		t.Errorf("convergence %v%%, delivery %v%%, missed %d; want 100%%, 100%%, 0\n%s", ph.Convergence, ph.Delivery, rx.Missed, out)
	}
	// The coalescer makes updates of the reactions (at most one per reaction); the display shows
	// the post 5 times a second, the first update after a quiet spell at once.
	if rx.Updates <= 0 || rx.Updates > 100 || rx.Display < 3 || rx.Display > 7 {
		t.Errorf("%v updates/s, %v displayed/s per viewer; want up to 100 and about 5\n%s", rx.Updates, rx.Display, out)
	}
	if rx.Sampled != 10 || ph.Samples < int64(rx.Sampled)*rx.Acked || ph.P95 == nil {
		t.Errorf("%d sampled viewers, %d latency samples, p95 %v; want 10, each reaction at each, and a p95\n%s", rx.Sampled, ph.Samples, ph.P95, out)
	}
}

// TestLoadgenJudgesLikesByWhatTheNodeDisplayed: 100 likes/s on a post whose node shows it 5
// times a second (a display budget of 500 frames/s over 100 viewers) is a healthy node: the ramp
// sees the node's display rate hold frames back and counts the frames the node displayed, which
// every viewer got, instead of calling each like not shown a loss.
func TestLoadgenJudgesLikesByWhatTheNodeDisplayed(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL)
	node := StartFanout(t, redis.URL, "DISPLAY_BUDGET=500", "DISPLAY_MIN_RATE=1")
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", node.URL, "--identity", "header",
		"--conns", "100", "--posts", "1", "--rate", "100", "--warmup", "1s", "--window", "3s", "--latency-sample", "10", "--json")
	ph := onePhase(t, out)
	held := false
	for _, n := range ph.Notes {
		held = held || strings.Contains(n, "display rate held frames back")
	}
	if !held || ph.Delivery < 99 || ph.Convergence != 100 || ph.Updates < 3 || ph.Updates > 7 || ph.Samples == 0 {
		t.Errorf("held noted %v, delivery %v%%, convergence %v%%, %v updates/s per viewer, %d latency samples; "+
			"want the hold noted, 100%%, 100%%, about 5, samples\n%s", held, ph.Delivery, ph.Convergence, ph.Updates, ph.Samples, out)
	}
}

package dockertest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The README's scale-and-rerun commands, run here as written (after `docker compose`), with
// shorter phases and --json appended for the test to read the result.
const (
	// scaleCommand is given the replicas to scale to (the README shows 4).
	scaleCommand = "up -d --wait --scale fanout-svc=%d"
	rerunCommand = "--profile bench run --rm --no-deps loadgen ramp --until-break --conns 250 --rate 100"
	rampShort    = "--warmup 2s --window 8s --json"
	// compareCommand is the README's comparison of the two ramps' JSON, run in the loadgen
	// container with the directory holding them mounted.
	compareCommand = `--profile bench run --rm --no-deps -T -u "$(id -u)" -v "$PWD:/cmp" loadgen compare /cmp/before.json /cmp/after.json --html /cmp/compare.html`
)

// rampResult is the part of `loadgen ramp --json` the suite reads (loadgen's report package is
// internal to loadgen; these are its JSON names).
type rampResult struct {
	raw      string   // the JSON as loadgen printed it, for `loadgen compare`
	Nodes    []string `json:"fanout_nodes"`
	Capacity *struct {
		Conns        int     `json:"conns"`
		EventsPerSec float64 `json:"events_per_s"`
		Nodes        int     `json:"nodes"`
		Stopped      string  `json:"stopped"`
		Broke        *struct {
			Conns   int      `json:"conns"`
			Reasons []string `json:"reasons"`
		} `json:"broke"`
	} `json:"capacity"`
	Phases []struct {
		ConnsWanted  int      `json:"conns_wanted"`
		ConnsOpen    int      `json:"conns_open"`
		ConnsFailed  int      `json:"conns_failed"`
		ConnsRefused int      `json:"conns_refused"`
		LikesPerSec  float64  `json:"likes_per_sec"`
		LikeErrors   int64    `json:"like_errors"`
		EventsPerSec float64  `json:"events_per_sec"`
		DeliveryPct  *float64 `json:"delivery_pct"`
		Convergence  *float64 `json:"convergence_pct"`
		LatencyP50   *float64 `json:"latency_p50_ms"`
		LatencyP99   *float64 `json:"latency_p99_ms"`
		NodesCPU     *float64 `json:"nodes_cpu_pct"`
		MemPerConnB  *float64 `json:"mem_per_conn_bytes"`
		GenCPU       *float64 `json:"generator_cpu_pct"`
		GenSaturated bool     `json:"generator_saturated"`
		RedisPerLike *float64 `json:"redis_us_per_like"`
		Subscribers  *struct {
			Min, Max int64
			Mismatch int
			NodesMax int `json:"nodes_max"`
		} `json:"redis_subscribers"`
		Broke []string `json:"slo_broken"`
		Nodes []struct {
			URL     string   `json:"url"`
			Viewers *float64 `json:"viewers"`
			CPUPct  *float64 `json:"cpu_pct"`
		} `json:"nodes"`
	} `json:"phases"`
}

// ramp runs the README's rerun command, a search for the capacity, and checks what every ramp
// must show: a capacity bracketed by a broken step; in every clean step all viewers open, every
// like delivered, every viewer on the final counts, each of the wanted nodes holding its share
// (its own /metrics gauge, as loadgen read it), and one Redis subscriber per node per post.
func (s *stack) ramp(t *testing.T, wantNodes int) rampResult {
	t.Helper()
	start := time.Now()
	out := s.mustCompose(15*time.Minute, strings.Fields(rerunCommand+" "+rampShort)...)
	var res rampResult
	i := strings.Index(out, "{")
	if i < 0 || json.Unmarshal([]byte(out[i:]), &res) != nil {
		t.Fatalf("loadgen printed no JSON result:\n%s", tailString(out, 4000))
	}
	res.raw = out[i:]
	t.Logf("ramp over %d node(s) took %v: %s\n%s", len(res.Nodes), time.Since(start).Round(time.Second), res.capacity(), res.table())
	if len(res.Nodes) != wantNodes {
		t.Fatalf("the ramp found %d fanout nodes %v; want %d (the rerun must not rescale the stack)", len(res.Nodes), res.Nodes, wantNodes)
	}
	if c := res.Capacity; c == nil || c.Conns == 0 || c.Broke == nil || c.Nodes != wantNodes {
		t.Fatalf("the ramp found no capacity bracketed by a broken step: %s", res.capacity())
	}
	for _, p := range res.Phases {
		if len(p.Broke) > 0 {
			continue
		}
		if p.ConnsOpen != p.ConnsWanted || p.ConnsFailed+p.ConnsRefused > 0 {
			t.Errorf("%d conns (clean): %d open, %d failed, %d refused; want all open", p.ConnsWanted, p.ConnsOpen, p.ConnsFailed, p.ConnsRefused)
		}
		if p.DeliveryPct == nil || *p.DeliveryPct < 99.9 || p.Convergence == nil || *p.Convergence != 100 {
			t.Errorf("%d conns (clean): delivery %s%%, convergence %s%%; want the objective's 99.9 and 100", p.ConnsWanted, fmtPtr(p.DeliveryPct), fmtPtr(p.Convergence))
		}
		share := float64(p.ConnsWanted) / float64(wantNodes)
		for _, n := range p.Nodes {
			// The gauge also counts the suite's own few viewers and the page's stream.
			if n.Viewers == nil || math.Abs(*n.Viewers-share) > 30 {
				t.Errorf("%d conns: node %s holds %s viewers; want its share, %.0f", p.ConnsWanted, n.URL, fmtPtr(n.Viewers), share)
			}
		}
		// Every post has viewers on every node once there are posts x nodes viewers.
		if sub := p.Subscribers; sub == nil || sub.Mismatch != 0 || (p.ConnsWanted >= 10*wantNodes && sub.Max != int64(wantNodes)) {
			t.Errorf("%d conns: Redis subscribers per post %+v; want one per node holding viewers of the post (%d)", p.ConnsWanted, sub, wantNodes)
		}
	}
	return res
}

// capacity is the ramp's capacity in a line.
func (r rampResult) capacity() string {
	c := r.Capacity
	if c == nil {
		return "no capacity"
	}
	line := fmt.Sprintf("capacity %d viewers, %.0f events/s on %d node(s), stopped: %s", c.Conns, c.EventsPerSec, c.Nodes, c.Stopped)
	if c.Broke != nil {
		line += fmt.Sprintf("; broke at %d: %s", c.Broke.Conns, strings.Join(c.Broke.Reasons, ", "))
	}
	return line
}

// compare runs the README's compare command on two ramps and returns its summary line, after
// checking that the line names both node counts and that the page was written.
func (s *stack) compare(t *testing.T, before, after rampResult) string {
	t.Helper()
	dir := t.TempDir()
	for name, raw := range map[string]string{"before.json": before.raw, "after.json": after.raw} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := strings.NewReplacer(`"$(id -u)"`, strconv.Itoa(os.Getuid()), `"$PWD:/cmp"`, dir+":/cmp").Replace(compareCommand)
	out := s.mustCompose(2*time.Minute, strings.Fields(cmd)...)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " vs ") && strings.Contains(l, "capacity") {
			line = strings.TrimSpace(l)
			break
		}
	}
	want := fmt.Sprintf("%d nodes vs %d:", len(after.Nodes), len(before.Nodes))
	if len(before.Nodes) == 1 && len(after.Nodes) == 1 {
		want = "1 node vs 1:"
	}
	if !strings.HasPrefix(line, want) {
		t.Fatalf("loadgen compare printed no line starting %q:\n%s", want, tailString(out, 4000))
	}
	page, err := os.ReadFile(filepath.Join(dir, "compare.html"))
	if err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("loadgen compare --html wrote no page with charts (%v):\n%s", err, tailString(string(page), 400))
	}
	t.Logf("loadgen compare:\n%s", out)
	return line
}

// table is a compact view of a ramp for the test log and docs/BENCHMARKS.md.
func (r rampResult) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %6s %5s %8s %9s %7s %6s %8s %8s %10s %8s %9s %11s  %-6s %s\n", "conns", "open", "likes/s", "events/s", "deliv%", "conv%",
		"p50 ms", "p99 ms", "nodes CPU%", "gen CPU%", "subs/post", "redis us/l", "slo", "viewers per node")
	for _, p := range r.Phases {
		var per []string
		for _, n := range p.Nodes {
			per = append(per, fmtPtr(n.Viewers))
		}
		subs, verdict := "-", "met"
		if p.Subscribers != nil {
			subs = fmt.Sprintf("%d-%d", p.Subscribers.Min, p.Subscribers.Max)
		}
		if len(p.Broke) > 0 {
			verdict = "broke"
		}
		fmt.Fprintf(&b, "  %6d %5d %8.0f %9.0f %7s %6s %8s %8s %10s %8s %9s %11s  %-6s %s\n", p.ConnsWanted, p.ConnsOpen, p.LikesPerSec, p.EventsPerSec,
			fmtPtr(p.DeliveryPct), fmtPtr(p.Convergence), fmtPtr(p.LatencyP50), fmtPtr(p.LatencyP99), fmtPtr(p.NodesCPU), fmtPtr(p.GenCPU),
			subs, fmtPtr(p.RedisPerLike), verdict, strings.Join(per, "/"))
	}
	return b.String()
}

func fmtPtr(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *f)
}

func decodeJSON(resp *http.Response, v any) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// TestReadmeShowsTheTestedCommands: the scale-and-rerun commands the README gives are the ones
// this suite runs, so what users copy is what was tested.
func TestReadmeShowsTheTestedCommands(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{fmt.Sprintf(scaleCommand, 4), rerunCommand, compareCommand} {
		if !strings.Contains(string(raw), "docker compose "+cmd) {
			t.Errorf("README.md does not show `docker compose %s`, the command the suite tests", cmd)
		}
	}
}

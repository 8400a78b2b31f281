package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// ramp builds a ramp over nodes fanout nodes from phases given as (conns, delivery %, p99 ms,
// nodes CPU %, events/s); a phase is clean when delivery is 100.
func ramp(nodes int, phases ...[5]float64) *Result {
	r := &Result{Mode: "open loop, 10 likes/s", Posts: 10, Window: "10s", GenCPUs: 2, Command: "loadgen ramp"}
	for n := range nodes {
		r.Nodes = append(r.Nodes, "http://10.0.0."+string(rune('1'+n))+":8090")
	}
	for _, f := range phases {
		p := Phase{ConnsWanted: int(f[0]), ConnsOpen: int(f[0]), DeliveryPct: Float(f[1]), ConvergencePct: 100,
			LatencyP50Ms: Float(f[2] / 4), LatencyP99Ms: Float(f[2]), LatencyP999Ms: Float(math.NaN()),
			NodesCPUPct: Float(f[3]), EventsPerSec: f[4], MemPerConnB: 4096}
		for range nodes {
			p.Nodes = append(p.Nodes, Node{CPUPct: Float(f[3] / float64(nodes))})
		}
		r.Phases = append(r.Phases, p)
	}
	return r
}

func TestCompareSummary(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name          string
		before, after *Result
		want          string
	}{
		{
			name:   "more nodes hold more and spend less per event",
			before: ramp(1, [5]float64{500, 100, 12, 40, 5000}, [5]float64{2000, 100, 40, 100, 20000}, [5]float64{8000, 91, 900, 100, 72000}),
			after:  ramp(4, [5]float64{500, 100, 9, 40, 5000}, [5]float64{2000, 100, 22, 88, 20000}, [5]float64{8000, 100, 30, 100, 80000}),
			want:   "4 nodes vs 1: max clean conns 2000 -> 8000 (4.0x), p99 at 8000 conns 900 ms -> 30 ms, CPU per event -10%",
		},
		{
			name:   "no clean phase before, p99 below 10 ms with a decimal",
			before: ramp(1, [5]float64{500, 98, 4.25, 50, 5000}),
			after:  ramp(2, [5]float64{500, 100, 3.5, 55, 5000}),
			want:   "2 nodes vs 1: max clean conns none -> 500, p99 at 500 conns 4.2 ms -> 3.5 ms, CPU per event +10%",
		},
		{
			name:   "p99 and CPU unknown",
			before: ramp(1, [5]float64{500, 100, nan, nan, 5000}),
			after:  ramp(1, [5]float64{500, 100, nan, nan, 5000}),
			want:   "1 node vs 1: max clean conns 500 -> 500 (1.0x), p99 unknown",
		},
		{
			name:   "CPU unknown after: no CPU clause",
			before: ramp(1, [5]float64{500, 100, 10, 20, 5000}, [5]float64{1000, 100, 20, 40, 10000}),
			after:  ramp(3, [5]float64{1000, 100, 15, nan, 10000}),
			want:   "3 nodes vs 1: max clean conns 1000 -> 1000 (1.0x), p99 at 1000 conns 20 ms -> 15 ms",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compare(tt.before, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if c.Summary != tt.want {
				t.Errorf("summary\ngot  %q\nwant %q", c.Summary, tt.want)
			}
		})
	}
}

func TestChange(t *testing.T) {
	tests := []struct {
		giveBefore, giveAfter float64
		want                  string
	}{
		{100, 88, "-12%"},
		{1, 4, "+300%"},
		{2000, 1995, "+0%"}, // -0.25% rounds to zero, never "-0%"
		{0, 5, ""},
		{math.NaN(), 5, ""},
		{5, math.Inf(1), ""},
	}
	for _, tt := range tests {
		if got := change(tt.giveBefore, tt.giveAfter); got != tt.want {
			t.Errorf("change(%v, %v) = %q; want %q", tt.giveBefore, tt.giveAfter, got, tt.want)
		}
	}
}

func TestCompareNeedsACommonCount(t *testing.T) {
	_, err := Compare(ramp(1, [5]float64{500, 100, 1, 1, 1}), ramp(4, [5]float64{1000, 100, 1, 1, 1}))
	if err == nil || !strings.Contains(err.Error(), "before has 500, after has 1000") {
		t.Fatalf("err = %v; want one that names both ramps' counts", err)
	}
}

func TestCompareTable(t *testing.T) {
	before := ramp(1, [5]float64{500, 100, 12, 40, 5000}, [5]float64{2000, 100, 40, 100, 20000})
	after := ramp(4, [5]float64{2000, 100, 20, 80, 20000})
	after.Window = "30s"
	c, err := Compare(before, after)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := CompareTable(&b, c); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[0] != c.Summary {
		t.Errorf("first line %q; want the summary %q", lines[0], c.Summary)
	}
	if !strings.Contains(b.String(), "note: the ramps differ in window: 10s vs 30s") {
		t.Errorf("table does not say the windows differ:\n%s", b.String())
	}
	// Heading, then before, after and change at the one common count.
	rows := lines[len(lines)-4:]
	for k, want := range []string{"lat p99", "before", "after", "change"} {
		if !strings.Contains(rows[k], want) {
			t.Errorf("row %d is %q; want it to contain %q", k, rows[k], want)
		}
	}
	if !strings.Contains(rows[2], "20/20/20/20") || !strings.Contains(rows[3], "-50%") {
		t.Errorf("after row %q, change row %q: want each node's CPU and p99 -50%%", rows[2], rows[3])
	}
	if len(rows[0]) != len(rows[1]) || len(rows[1]) != len(rows[3]) {
		t.Errorf("rows not aligned:\n%s", strings.Join(rows, "\n"))
	}
}

func TestCompareHTMLSelfContained(t *testing.T) {
	before := ramp(1, [5]float64{500, 100, 12, 40, 5000})
	before.Command = "loadgen ramp <b>"
	c, err := Compare(before, ramp(2, [5]float64{500, 100, 8, 42, 5000}))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	checkSelfContained(t, out, 5)
	for _, want := range []string{"<strong>2 nodes vs 1: max clean conns 500 -&gt; 500 (1.0x), p99 at 500 conns 12 ms -&gt; 8.0 ms", "&lt;b&gt;", "before (1 node)", "after (2 nodes)", "after p99", "<style>"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestReadResult(t *testing.T) {
	good, err := json.Marshal(ramp(2, [5]float64{500, 100, 3, 10, 5000}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		give    string
		wantErr string // empty: the result reads
	}{
		{name: "as --json prints it", give: string(good)},
		{name: "after progress lines a terminal merged in", give: "phase 500: connecting\r\n" + string(good)},
		{name: "churn result", give: `{"opened":3,"refused":0,"failed":0}`, wantErr: "no phases"},
		{name: "not JSON", give: "conns open likes/s\n500 500 10\n", wantErr: "not a loadgen ramp result"},
		{name: "phase without conns", give: `{"phases":[{"conns_open":3}]}`, wantErr: "no connection count"},
		{name: "empty", give: "", wantErr: "not a loadgen ramp result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ReadResult(strings.NewReader(tt.give))
			if tt.wantErr == "" {
				if err != nil || len(r.Nodes) != 2 || r.Phases[0].ConnsWanted != 500 || r.Phases[0].LatencyP999Ms.Known() {
					t.Fatalf("got %+v, %v; want the 2-node ramp back", r, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v; want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// searched is a ramp that found a capacity at its last clean phase.
func searched(nodes int, capacity, broke [5]float64, subs int64, redisMicros float64) *Result {
	r := ramp(nodes, capacity, broke)
	clean, bad := &r.Phases[0], &r.Phases[1]
	for _, p := range []*Phase{clean, bad} {
		p.OfferedLikesPerSec, p.UpdatesPerSec, p.RedisMicrosPerLike = 100, 10, Float(redisMicros)
		p.Subscribers = &Subscribers{Min: subs, Max: subs, NodesMax: int(subs), Viewers: p.ConnsWanted / 10}
	}
	bad.Broke = []string{"p99 340 ms > 100 ms"}
	r.Capacity = &Capacity{Grow: "conns", Objective: "p99<=100ms", Nodes: nodes, Conns: clean.ConnsWanted,
		UpdatesPerSec: 10, LikesPerSec: 100, EventsPerSec: clean.EventsPerSec, Stopped: "within 10%",
		Broke: &Step{Conns: bad.ConnsWanted, UpdatesPerSec: 10, Reasons: bad.Broke}}
	return r
}

// TestCompareCapacitiesFirst: two searches share no connection count, and the comparison puts
// their capacities side by side, then what a like cost Redis at each.
func TestCompareCapacitiesFirst(t *testing.T) {
	before := searched(1, [5]float64{1400, 100, 60, 25, 14000}, [5]float64{1550, 99, 340, 25, 15000}, 1, 11)
	after := searched(4, [5]float64{5600, 100, 70, 100, 56000}, [5]float64{6100, 99, 300, 100, 60000}, 4, 12)
	c, err := Compare(before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := "4 nodes vs 1: capacity 1,400 -> 5,600 viewers (4.0x) x 10 updates/s, 14,000 -> 56,000 events/s (4.0x); " +
		"Redis subscribers per post 1 -> 4 (nodes holding it: 1 -> 4; its viewers 140 -> 560), Redis CPU per like 11.0 -> 12.0 us (+9%)"
	if c.Summary != want {
		t.Errorf("summary:\n got %s\nwant %s", c.Summary, want)
	}
	var b bytes.Buffer
	if err := CompareTable(&b, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "after: capacity: 5,600 viewers x 10 updates/s = 56,000 events/s on 4 nodes; broke at 6,100: p99 340 ms > 100 ms") {
		t.Errorf("the table does not give each capacity line:\n%s", b.String())
	}
	b.Reset()
	if err := CompareHTML(&b, c); err != nil || !strings.Contains(b.String(), "<svg") || !strings.Contains(b.String(), "Capacity") {
		t.Errorf("the page has no capacity chart (%v):\n%s", err, b.String())
	}
}

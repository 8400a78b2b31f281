package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func sampleResult() *Result {
	nan := Float(math.NaN())
	return &Result{
		Mode: "closed loop, 4 writers", Posts: 2, Warmup: "1s", Window: "2s", GenCPUs: 1,
		Nodes: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, MemMethod: "test",
		Command: "loadgen ramp --conns 100,200 <script>",
		Phases: []Phase{
			{ConnsWanted: 100, ConnsOpen: 100, LikesPerSec: 50, EventsPerSec: 2500, DeliveryPct: 100,
				ConvergencePct: 100, LatencyP50Ms: 1.2, LatencyP99Ms: 3.4, LatencyP999Ms: nan,
				MemPerConnIdleB: 2048, MemPerConnB: 4096, GenCPUPct: 12, NodesCPUPct: 30,
				Nodes: []Node{{URL: "http://127.0.0.1:1", Viewers: 50, CPUPct: 15, RSSBytes: 20 << 20, MemPerConnB: 4096}},
				Notes: []string{"a note"}},
			{ConnsWanted: 200, ConnsOpen: 180, ConnsRefused: 20, DeliveryPct: 99.5, ConvergencePct: 100,
				LatencyP50Ms: 2, LatencyP99Ms: 8, LatencyP999Ms: 20, MemPerConnIdleB: nan, MemPerConnB: nan, GenCPUPct: 20},
		},
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"deliv %", "lat p99.9", "KiB/conn idle", "gen CPU%", "99.50", "2.00", "http://127.0.0.1:1", "note (100 conns): a note"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	if len(lines[1]) != len(lines[2]) || len(lines[2]) != len(lines[3]) {
		t.Errorf("table rows not aligned:\n%s\n%s\n%s", lines[1], lines[2], lines[3])
	}
}

func TestCSV(t *testing.T) {
	var b bytes.Buffer
	if err := CSV(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("got %d records; want header + 2 phases", len(recs))
	}
	if want := len(columns) + 2*5; len(recs[0]) != want {
		t.Fatalf("got %d columns; want %d", len(recs[0]), want)
	}
	if recs[0][0] != "conns_wanted" || recs[1][0] != "100" || recs[2][3] != "20" {
		t.Fatalf("unexpected CSV: %v", recs)
	}
}

func TestJSONWritesNaNAsNull(t *testing.T) {
	b, err := json.Marshal(sampleResult())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"latency_p999_ms":null`) {
		t.Fatalf("NaN not written as null: %s", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Phases[1].DeliveryPct != 99.5 || back.Phases[0].LatencyP999Ms.Known() {
		t.Fatalf("round trip lost values: %+v", back.Phases)
	}
}

func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	checkSelfContained(t, out, 4)
	if !strings.Contains(out, "&lt;script&gt;") {
		t.Error("the command line was not escaped")
	}
}

// checkSelfContained fails t unless page has charts inline SVG charts and loads and runs nothing.
func checkSelfContained(t *testing.T, page string, charts int) {
	t.Helper()
	if n := strings.Count(page, "<svg"); n != charts {
		t.Errorf("page has %d charts; want %d", n, charts)
	}
	for _, banned := range []string{"<script", "src=", "href=", "@import"} {
		if strings.Contains(page, banned) {
			t.Errorf("page contains %q: it must load nothing from elsewhere and run no script", banned)
		}
	}
}

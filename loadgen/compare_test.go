package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/likes/likes/loadgen/internal/report"
)

// writeRamp writes a ramp result over nodes fanout nodes as `loadgen ramp --json` would, one
// phase per conns, with the p99 given.
func writeRamp(t *testing.T, dir, name string, nodes int, conns []int, p99 []float64) string {
	t.Helper()
	r := report.Result{Mode: "open loop, 10 likes/s", Posts: 10, Window: "10s", Command: "loadgen ramp --json"}
	for range nodes {
		r.Nodes = append(r.Nodes, "http://fanout-svc:8090")
	}
	for k, c := range conns {
		r.Phases = append(r.Phases, report.Phase{ConnsWanted: c, ConnsOpen: c, DeliveryPct: 100, ConvergencePct: 100,
			EventsPerSec: float64(c) * 10, LatencyP50Ms: 1, LatencyP99Ms: report.Float(p99[k]), LatencyP999Ms: report.Float(p99[k] * 2),
			NodesCPUPct: report.Float(c / 20), MemPerConnB: 4000, Nodes: make([]report.Node, nodes)})
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	before := writeRamp(t, dir, "before.json", 1, []int{500, 2000}, []float64{12, 40})
	after := writeRamp(t, dir, "after.json", 4, []int{500, 2000}, []float64{9, 22})
	page := filepath.Join(dir, "compare.html")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"loadgen", "compare", before, after, "--html", page}, func(string) string { return "" }, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("compare: %v\n%s", err, stderr.String())
	}
	first, _, _ := strings.Cut(stdout.String(), "\n")
	if want := "4 nodes vs 1: max clean conns 2000 -> 2000 (1.0x), p99 at 2000 conns 40 ms -> 22 ms, CPU per event +0%"; first != want {
		t.Errorf("first line\ngot  %q\nwant %q", first, want)
	}
	if n := strings.Count(stdout.String(), "change"); n != 2 {
		t.Errorf("got %d change rows; want 2 (500 and 2000 conns):\n%s", n, stdout.String())
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), "<svg"); n != 5 {
		t.Errorf("page has %d charts; want 5", n)
	}
}

func TestCompareCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeRamp(t, dir, "good.json", 1, []int{500}, []float64{10})
	other := writeRamp(t, dir, "other.json", 2, []int{1000}, []float64{10})
	churn := filepath.Join(dir, "churn.json")
	if err := os.WriteFile(churn, []byte(`{"opened":10,"refused":0,"failed":0}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		give    []string
		wantErr string
	}{
		{"missing file", []string{good, filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
		{"churn result", []string{churn, good}, "churn.json: not a loadgen ramp result"},
		{"no common count", []string{good, other}, "no connection count in both ramps: before has 500, after has 1000"},
		{"one file", []string{good}, "two result files"},
		{"three files", []string{good, good, good}, "two result files"},
		{"unknown flag", []string{good, good, "--pdf", "x"}, "-pdf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"loadgen", "compare"}, tt.give...), func(string) string { return "" }, nil, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v; want one containing %q", err, tt.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("printed %q on bad input; want nothing", stdout.String())
			}
		})
	}
}

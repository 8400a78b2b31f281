package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Comparison puts two ramps side by side at the connection counts both measured.
type Comparison struct {
	Before, After *Result
	Pairs         []Pair
	// Summary says in one line what changed, e.g. "4 nodes vs 1: max clean conns 500 -> 2000
	// (4.0x), p99 at 2000 conns 40 ms -> 22 ms, CPU per event -12%".
	Summary string
	// Differences lists the settings in which the two ramps differ (mode, posts, feed, window),
	// which a reader should weigh before crediting the nodes with the change.
	Differences []string
}

// Pair is one connection count both ramps measured.
type Pair struct {
	Conns         int
	Before, After *Phase
}

// ReadResult reads a ramp result as `loadgen ramp --json` prints it. Lines before the JSON are
// skipped: a terminal (`docker compose run` without -T) merges the ramp's progress lines into
// what it prints. Anything that is not a ramp with at least one phase is an error.
func ReadResult(r io.Reader) (*Result, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	start := 0
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		if k := bytes.Index(raw, []byte("\n{")); k >= 0 {
			start = k + 1
		}
	}
	var res Result
	if err := json.Unmarshal(raw[start:], &res); err != nil {
		return nil, fmt.Errorf("not a loadgen ramp result (JSON of `loadgen ramp --json`): %w", err)
	}
	if len(res.Phases) == 0 {
		return nil, errors.New("not a loadgen ramp result: it has no phases")
	}
	for _, p := range res.Phases {
		if p.ConnsWanted <= 0 {
			return nil, errors.New("not a loadgen ramp result: a phase has no connection count")
		}
	}
	return &res, nil
}

// Compare pairs the phases of before and after by wanted connections. It fails when the ramps
// share no connection count and do not both have a capacity (--until-break): there would be
// nothing to put side by side.
func Compare(before, after *Result) (*Comparison, error) {
	c := &Comparison{Before: before, After: after}
	for k := range before.Phases {
		b := &before.Phases[k]
		if a := phaseAt(after, b.ConnsWanted); a != nil {
			c.Pairs = append(c.Pairs, Pair{Conns: b.ConnsWanted, Before: b, After: a})
		}
	}
	if len(c.Pairs) == 0 && (before.Capacity == nil || after.Capacity == nil) {
		return nil, fmt.Errorf("no connection count in both ramps: before has %s, after has %s (rerun one with the other's --conns)",
			connList(before), connList(after))
	}
	c.Summary = summary(c)
	c.Differences = differences(before, after)
	return c, nil
}

func phaseAt(r *Result, conns int) *Phase {
	for k := range r.Phases {
		if r.Phases[k].ConnsWanted == conns {
			return &r.Phases[k]
		}
	}
	return nil
}

func connList(r *Result) string {
	s := make([]string, len(r.Phases))
	for k, p := range r.Phases {
		s[k] = strconv.Itoa(p.ConnsWanted)
	}
	return strings.Join(s, ",")
}

// clean reports whether a phase held every viewer it wanted and delivered every event to all
// of them: what the suite asserts of every ramp.
func clean(p *Phase) bool {
	return p.ConnsOpen == p.ConnsWanted && p.ConnsFailed+p.ConnsRefused+p.ConnsDropped == 0 &&
		p.DeliveryPct == 100 && p.ConvergencePct == 100
}

// maxClean is the most connections of a clean phase, 0 when none was clean.
func maxClean(r *Result) int {
	most := 0
	for k := range r.Phases {
		if clean(&r.Phases[k]) {
			most = max(most, r.Phases[k].ConnsWanted)
		}
	}
	return most
}

// cpuPerEvent is fanout CPU seconds per delivered event (NaN when unknown).
func cpuPerEvent(p *Phase) float64 {
	if !p.NodesCPUPct.Known() || p.EventsPerSec <= 0 {
		return math.NaN()
	}
	return float64(p.NodesCPUPct) / 100 / p.EventsPerSec
}

// summary builds the one line: node counts, then the capacities when both ramps searched for
// theirs, else the most clean connections of each and, at the largest common count with a known
// p99 in both, p99 and CPU per event.
func summary(c *Comparison) string {
	nodes := fmt.Sprintf("%s vs %d: ", plural(len(c.After.Nodes), "node"), len(c.Before.Nodes))
	if c.Before.Capacity != nil && c.After.Capacity != nil {
		return nodes + capacitySummary(c)
	}
	b, a := maxClean(c.Before), maxClean(c.After)
	clause := nodes + "max clean conns " + cleanConns(b) + " -> " + cleanConns(a)
	if a > 0 && b > 0 {
		clause += fmt.Sprintf(" (%.1fx)", float64(a)/float64(b))
	}
	parts := []string{clause}
	var at *Pair
	for k := range c.Pairs {
		if p := &c.Pairs[k]; p.Before.LatencyP99Ms.Known() && p.After.LatencyP99Ms.Known() {
			at = p
		}
	}
	if at == nil {
		parts = append(parts, "p99 unknown")
		return strings.Join(parts, ", ")
	}
	parts = append(parts, fmt.Sprintf("p99 at %d conns %s ms -> %s ms", at.Conns,
		at.Before.LatencyP99Ms.format(precision(at.Before.LatencyP99Ms)), at.After.LatencyP99Ms.format(precision(at.After.LatencyP99Ms))))
	if ch := change(cpuPerEvent(at.Before), cpuPerEvent(at.After)); ch != "" {
		parts = append(parts, "CPU per event "+ch)
	}
	return strings.Join(parts, ", ")
}

// capacitySummary compares two capacities, then what a like cost Redis at each: "capacity 1,400
// -> 5,600 viewers (4.0x) x 10 updates/s, 14,000 -> 56,000 events/s (4.0x); Redis subscribers
// per post 1 -> 4 (the nodes; viewers per post 140 -> 560), Redis CPU per like 11 -> 12 us (+9%)".
func capacitySummary(c *Comparison) string {
	b, a := c.Before.Capacity, c.After.Capacity
	what, bv, av := "viewers", float64(b.Conns), float64(a.Conns)
	if a.Grow == "rate" && b.Grow == "rate" {
		what, bv, av = "updates/s per viewer", b.UpdatesPerSec, a.UpdatesPerSec
	}
	line := fmt.Sprintf("capacity %s -> %s %s%s", thousands(bv), thousands(av), what, ratio(bv, av))
	if what == "viewers" {
		line += " x " + rate(a.UpdatesPerSec) + " updates/s"
	}
	line += fmt.Sprintf(", %s -> %s events/s%s", thousands(b.EventsPerSec), thousands(a.EventsPerSec), ratio(b.EventsPerSec, a.EventsPerSec))
	bp, ap := capacityPhase(c.Before), capacityPhase(c.After)
	if bp == nil || ap == nil {
		return line
	}
	var redis []string
	if bs, as := bp.Subscribers, ap.Subscribers; bs != nil && as != nil {
		redis = append(redis, fmt.Sprintf("Redis subscribers per post %s -> %s (nodes holding it: %d -> %d; its viewers %s -> %s)",
			subscribers(bs), subscribers(as), bs.NodesMax, as.NodesMax, thousands(float64(bs.Viewers)), thousands(float64(as.Viewers))))
	}
	if bp.RedisMicrosPerLike.Known() && ap.RedisMicrosPerLike.Known() {
		part := fmt.Sprintf("Redis CPU per like %s -> %s us", bp.RedisMicrosPerLike.format(1), ap.RedisMicrosPerLike.format(1))
		if ch := change(float64(bp.RedisMicrosPerLike), float64(ap.RedisMicrosPerLike)); ch != "" {
			part += " (" + ch + ")"
		}
		redis = append(redis, part)
	}
	if len(redis) == 0 {
		return line
	}
	return line + "; " + strings.Join(redis, ", ")
}

// capacityPhase is the phase at a ramp's capacity (its last clean step), nil when none.
func capacityPhase(r *Result) *Phase {
	if r.Capacity == nil || r.Capacity.Conns == 0 {
		return nil
	}
	var found *Phase
	for k := range r.Phases {
		p := &r.Phases[k]
		if len(p.Broke) == 0 && p.ConnsWanted == r.Capacity.Conns && p.OfferedLikesPerSec == r.Capacity.LikesPerSec {
			found = p
		}
	}
	return found
}

// ratio is " (4.0x)" when both are positive, else "".
func ratio(b, a float64) string {
	if b <= 0 || a <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return ""
	}
	return fmt.Sprintf(" (%.1fx)", a/b)
}

func cleanConns(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// precision gives a latency whole milliseconds from 10 ms up and one decimal below.
func precision(f Float) int {
	if f >= 10 {
		return 0
	}
	return 1
}

// change is the relative change from b to a, "+12%" or "-3%"; empty when either is unknown or
// b is zero.
func change(b, a float64) string {
	if math.IsNaN(b) || math.IsNaN(a) || math.IsInf(b, 0) || math.IsInf(a, 0) || b == 0 {
		return ""
	}
	v := math.Round((a/b - 1) * 100)
	if v == 0 {
		v = 0 // not -0: a change of -0.4% reads "+0%"
	}
	return fmt.Sprintf("%+.0f%%", v)
}

func differences(b, a *Result) []string {
	var out []string
	for _, d := range []struct{ what, b, a string }{
		{"mode", b.Mode, a.Mode},
		{"posts", strconv.Itoa(b.Posts), strconv.Itoa(a.Posts)},
		{"feed", strconv.Itoa(b.Feed), strconv.Itoa(a.Feed)},
		{"warmup", b.Warmup, a.Warmup},
		{"window", b.Window, a.Window},
		{"generator CPUs", strconv.Itoa(b.GenCPUs), strconv.Itoa(a.GenCPUs)},
	} {
		if d.b != d.a {
			out = append(out, fmt.Sprintf("%s: %s vs %s", d.what, d.b, d.a))
		}
	}
	return out
}

// compared are the figures a comparison shows: the table column of that CSV name (heading and
// format) and the number behind it, for the change row.
var compared = []struct {
	csv string
	num func(*Phase) float64
}{
	{"conns_open", func(p *Phase) float64 { return float64(p.ConnsOpen) }},
	{"events_per_sec", func(p *Phase) float64 { return p.EventsPerSec }},
	{"delivery_pct", func(p *Phase) float64 { return float64(p.DeliveryPct) }},
	{"convergence_pct", func(p *Phase) float64 { return float64(p.ConvergencePct) }},
	{"latency_p50_ms", func(p *Phase) float64 { return float64(p.LatencyP50Ms) }},
	{"latency_p99_ms", func(p *Phase) float64 { return float64(p.LatencyP99Ms) }},
	{"latency_p999_ms", func(p *Phase) float64 { return float64(p.LatencyP999Ms) }},
	{"mem_per_conn_kib", func(p *Phase) float64 { return float64(p.MemPerConnB) }},
	{"nodes_cpu_pct", func(p *Phase) float64 { return float64(p.NodesCPUPct) }},
	{"events_per_node_cpu_sec", func(p *Phase) float64 { return float64(p.EventsPerNodeCPUSec) }},
}

func columnNamed(csv string) column {
	k := slices.IndexFunc(columns, func(c column) bool { return c.csv == csv })
	return columns[k]
}

// nodeCPUs lists each node's CPU in % of one core, "45/43/44/46".
func nodeCPUs(p *Phase) string {
	s := make([]string, len(p.Nodes))
	for k, n := range p.Nodes {
		s[k] = n.CPUPct.format(0)
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, "/")
}

// rows are the comparison's table: per common count a before row, an after row and a change row.
func (c *Comparison) rows() (heads []string, rows [][]string) {
	heads = []string{"conns", "run", "nodes"}
	for _, f := range compared {
		heads = append(heads, columnNamed(f.csv).head)
	}
	heads = append(heads, "CPU% per node")
	for _, pr := range c.Pairs {
		for _, run := range []struct {
			name string
			r    *Result
			p    *Phase
		}{{"before", c.Before, pr.Before}, {"after", c.After, pr.After}} {
			row := []string{strconv.Itoa(pr.Conns), run.name, strconv.Itoa(len(run.r.Nodes))}
			for _, f := range compared {
				row = append(row, columnNamed(f.csv).value(run.p))
			}
			rows = append(rows, append(row, nodeCPUs(run.p)))
		}
		row := []string{strconv.Itoa(pr.Conns), "change", change(float64(len(c.Before.Nodes)), float64(len(c.After.Nodes)))}
		for _, f := range compared {
			ch := change(f.num(pr.Before), f.num(pr.After))
			if ch == "" {
				ch = "-"
			}
			row = append(row, ch)
		}
		rows = append(rows, append(row, "-"))
	}
	return heads, rows
}

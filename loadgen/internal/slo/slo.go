package slo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/likes/likes/loadgen/internal/report"
)

// Default is the objective a ramp uses unless --slo says otherwise: what a viewer notices (an
// update later than 100 ms at the 99th percentile, a missed update, a count left wrong) and
// anything the deployment refused or dropped.
const Default = "p99<=100ms,delivery>=99.9%,converged>=100%,errors=0"

// Objective is a parsed --slo: every term must hold for a phase to be clean.
type Objective struct {
	terms []term
	text  string
}

type term struct {
	metric metric
	op     string // one of ops
	limit  float64
}

// metric is one figure of a phase the objective can name.
type metric struct {
	name    string
	unit    string // "ms", "%" or "" (a count)
	of      func(*report.Phase) float64
	viewers bool // a figure of what viewers received: none in a phase of no viewers
}

var metrics = []metric{
	{name: "p50", unit: "ms", viewers: true, of: func(p *report.Phase) float64 { return float64(p.LatencyP50Ms) }},
	{name: "p95", unit: "ms", viewers: true, of: func(p *report.Phase) float64 { return float64(p.LatencyP95Ms) }},
	{name: "p99", unit: "ms", viewers: true, of: func(p *report.Phase) float64 { return float64(p.LatencyP99Ms) }},
	{name: "p999", unit: "ms", viewers: true, of: func(p *report.Phase) float64 { return float64(p.LatencyP999Ms) }},
	{name: "like_p99", unit: "ms", of: func(p *report.Phase) float64 { return float64(p.LikeP99Ms) }},
	{name: "delivery", unit: "%", viewers: true, of: func(p *report.Phase) float64 { return float64(p.DeliveryPct) }},
	{name: "converged", unit: "%", viewers: true, of: func(p *report.Phase) float64 { return float64(p.ConvergencePct) }},
	{name: "errors", unit: "", of: func(p *report.Phase) float64 { return float64(Errors(p)) }},
}

// ops are the comparisons a term may use, longest first so that "<=" is not read as "<".
var ops = []string{"<=", ">=", "<", ">", "="}

// Errors is everything a phase's users would have seen fail: likes answered with an error or
// never sent because the writer fell behind (the open loop's skipped likes), and viewers that
// failed to connect, were refused (a full node's 503) or were dropped.
func Errors(p *report.Phase) int64 {
	return p.LikeErrors + p.LikesSkipped + int64(p.ConnsFailed+p.ConnsRefused+p.ConnsDropped)
}

// Parse reads an objective: comma-separated terms NAME OP VALUE, with NAME one of p50, p95,
// p99, p999 (delivery latency), like_p99 (like request latency), delivery, converged (percent of
// viewers on the final counts) and errors; latencies take a duration (100ms, 1s), percentages a
// % sign.
func Parse(s string) (Objective, error) {
	o := Objective{text: strings.ReplaceAll(s, " ", "")}
	for _, raw := range strings.Split(o.text, ",") {
		if raw == "" {
			continue
		}
		t, err := parseTerm(raw)
		if err != nil {
			return Objective{}, fmt.Errorf("--slo %q: %w", s, err)
		}
		o.terms = append(o.terms, t)
	}
	if len(o.terms) == 0 {
		return Objective{}, fmt.Errorf("--slo %q names no term", s)
	}
	return o, nil
}

func parseTerm(raw string) (term, error) {
	for _, op := range ops {
		name, value, ok := strings.Cut(raw, op)
		if !ok {
			continue
		}
		m, found := metricNamed(name)
		if !found {
			return term{}, fmt.Errorf("%q: unknown figure %q (want p50, p95, p99, p999, like_p99, delivery, converged or errors)", raw, name)
		}
		limit, err := parseValue(m, value)
		if err != nil {
			return term{}, fmt.Errorf("%q: %w", raw, err)
		}
		return term{metric: m, op: op, limit: limit}, nil
	}
	return term{}, fmt.Errorf("%q: want NAME<=VALUE (or >=, <, >, =)", raw)
}

func metricNamed(name string) (metric, bool) {
	for _, m := range metrics {
		if m.name == name {
			return m, true
		}
	}
	return metric{}, false
}

func parseValue(m metric, value string) (float64, error) {
	switch m.unit {
	case "ms":
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s wants a duration such as 100ms, not %q", m.name, value)
		}
		return float64(d) / float64(time.Millisecond), nil
	case "%":
		v, err := strconv.ParseFloat(strings.TrimSuffix(value, "%"), 64)
		if err != nil || !strings.HasSuffix(value, "%") || v < 0 || v > 100 {
			return 0, fmt.Errorf("%s wants a percentage such as 99.9%%, not %q", m.name, value)
		}
		return v, nil
	}
	v, err := strconv.ParseInt(value, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s wants a whole number, not %q", m.name, value)
	}
	return float64(v), nil
}

// String is the objective as given, without spaces.
func (o Objective) String() string { return o.text }

// Check returns what of the objective a phase broke, e.g. "p99 340 ms > 100 ms"; none when the
// phase is clean. An unknown figure (a phase that delivered nothing has no p99) breaks its term;
// a phase that asked for no viewers (the writers alone, --conns 0) has no viewer figures to judge.
func (o Objective) Check(p *report.Phase) []string {
	var broke []string
	for _, t := range o.terms {
		if t.metric.viewers && p.ConnsWanted == 0 {
			continue
		}
		v := t.metric.of(p)
		if !math.IsNaN(v) && holds(v, t.op, t.limit) {
			continue
		}
		broke = append(broke, fmt.Sprintf("%s %s %s %s", t.metric.name, format(t.metric, v), negate(t.op), format(t.metric, t.limit)))
	}
	return broke
}

func holds(v float64, op string, limit float64) bool {
	switch op {
	case "<=":
		return v <= limit
	case ">=":
		return v >= limit
	case "<":
		return v < limit
	case ">":
		return v > limit
	}
	return v == limit
}

// negate is the comparison a broken term shows: "p99 340 ms > 100 ms" for p99<=100ms.
func negate(op string) string {
	return map[string]string{"<=": ">", ">=": "<", "<": ">=", ">": "<=", "=": "!="}[op]
}

func format(m metric, v float64) string {
	if math.IsNaN(v) {
		return "unknown"
	}
	switch m.unit {
	case "ms":
		if v >= 10 {
			return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	case "%":
		// Two decimals at most, rounded down: 99.899% must not read as the 99.9% it missed.
		return strconv.FormatFloat(math.Floor(v*100)/100, 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

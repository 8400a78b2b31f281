package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"text/tabwriter"
)

// CompareTable writes a comparison as aligned text: the summary line, each ramp's settings and
// command, any setting in which they differ, then per common connection count a before, an
// after and a change row.
func CompareTable(w io.Writer, c *Comparison) error {
	fmt.Fprintln(w, c.Summary)
	for _, run := range []struct {
		name string
		r    *Result
	}{{"before", c.Before}, {"after", c.After}} {
		fmt.Fprintf(w, "%s: %s, %s, %d posts, window %s: %s\n", run.name, plural(len(run.r.Nodes), "fanout node"),
			run.r.Mode, run.r.Posts, run.r.Window, run.r.Command)
		if run.r.Capacity != nil {
			fmt.Fprintf(w, "%s: %s\n", run.name, CapacityLine(run.r.Capacity))
		}
	}
	if len(c.Pairs) == 0 {
		return nil
	}
	for _, d := range c.Differences {
		fmt.Fprintln(w, "note: the ramps differ in "+d)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	heads, rows := c.rows()
	fmt.Fprintln(tw, strings.Join(heads, "\t")+"\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// CompareHTML writes a self-contained page: the summary, both commands, charts with both ramps
// against the common connection counts (events/s, delivery, latency, memory per connection,
// fanout CPU) and the table. It loads nothing from elsewhere.
func CompareHTML(w io.Writer, c *Comparison) error {
	xs := make([]float64, len(c.Pairs))
	for k, p := range c.Pairs {
		xs[k] = float64(p.Conns)
	}
	// A legend entry has about 120 pixels: node counts where a chart has two lines, the
	// percentile where it has four.
	both := func(suffix string, f func(*Phase) float64, bColor, aColor string) []series {
		bs, as := make([]float64, len(c.Pairs)), make([]float64, len(c.Pairs))
		for k, p := range c.Pairs {
			bs[k], as[k] = f(p.Before), f(p.After)
		}
		bName, aName := "before"+suffix, "after"+suffix
		if suffix == "" {
			bName = fmt.Sprintf("before (%s)", plural(len(c.Before.Nodes), "node"))
			aName = fmt.Sprintf("after (%s)", plural(len(c.After.Nodes), "node"))
		}
		return []series{{bName, bColor, bs}, {aName, aColor, as}}
	}
	const blue, orange, lightBlue, red = "#1f77b4", "#ff7f0e", "#9ecae1", "#d62728"
	charts := []template.HTML{
		template.HTML(lineChart("Events delivered per second", "events/s", xs,
			both("", func(p *Phase) float64 { return p.EventsPerSec }, blue, orange))),
		template.HTML(lineChart("Delivery", "%", xs,
			both("", func(p *Phase) float64 { return float64(p.DeliveryPct) }, blue, orange))),
		template.HTML(lineChart("Delivery latency", "ms", xs, append(
			both(" p50", func(p *Phase) float64 { return float64(p.LatencyP50Ms) }, lightBlue, "#fdae6b"),
			both(" p99", func(p *Phase) float64 { return float64(p.LatencyP99Ms) }, blue, red)...))),
		template.HTML(lineChart("Fanout memory per connection", "KiB", xs,
			both("", func(p *Phase) float64 { return float64(p.MemPerConnB) / 1024 }, blue, orange))),
		template.HTML(lineChart("Fanout CPU, all nodes", "% of one core", xs,
			both("", func(p *Phase) float64 { return float64(p.NodesCPUPct) }, blue, orange))),
	}
	if len(c.Pairs) == 0 {
		charts = nil
	}
	if b, a := c.Before.Capacity, c.After.Capacity; b != nil && a != nil {
		// Capacity against nodes: the line a person sizing a deployment extrapolates.
		nodes := []float64{0, float64(b.Nodes), float64(a.Nodes)}
		charts = append([]template.HTML{template.HTML(lineChart("Capacity (events/s within the objective)", "events/s", nodes, []series{
			{"capacity", blue, []float64{0, b.EventsPerSec, a.EventsPerSec}},
			{"linear from before", lightBlue, []float64{0, b.EventsPerSec, b.EventsPerSec / float64(max(b.Nodes, 1)) * float64(a.Nodes)}},
		}))}, charts...)
	}
	heads, rows := c.rows()
	return comparePage.Execute(w, map[string]any{"C": c, "Charts": charts, "Heads": heads, "Rows": rows})
}

var comparePage = template.Must(template.Must(template.New("compare").Parse(style)).Funcs(template.FuncMap{
	"capacity": CapacityLine,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>likes ramps compared</title>
{{template "style"}}</head><body>
<h1>likes ramps compared</h1>
<p><strong>{{.C.Summary}}</strong></p>
{{with .C.Before.Capacity}}<p>Before: {{capacity .}}</p>{{end}}{{with .C.After.Capacity}}<p>After: {{capacity .}}</p>{{end}}
<p>Before: started {{.C.Before.Started}}, {{len .C.Before.Nodes}} fanout node(s), {{.C.Before.Mode}}: <code>{{.C.Before.Command}}</code><br>
After: started {{.C.After.Started}}, {{len .C.After.Nodes}} fanout node(s), {{.C.After.Mode}}: <code>{{.C.After.Command}}</code></p>
{{range .C.Differences}}<p>Note: the ramps differ in {{.}}.</p>{{end}}
<div class="charts">{{range .Charts}}<div>{{.}}</div>{{end}}</div>
<h2>Side by side</h2>
<p>Latencies in ms; CPU in % of one core; change is after against before.</p>
<table><tr>{{range .Heads}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
</body></html>
`))

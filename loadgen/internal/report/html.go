package report

import (
	"html/template"
	"io"
	"strings"
)

// HTML writes a self-contained page: the settings, the charts (events/s, delivery and
// convergence, latency, memory per connection, each against connections) as inline SVG, the
// table and the notes. It loads nothing from elsewhere.
func HTML(w io.Writer, r *Result) error {
	xs := make([]float64, len(r.Phases))
	get := func(f func(*Phase) float64) []float64 {
		ys := make([]float64, len(r.Phases))
		for k := range r.Phases {
			ys[k] = f(&r.Phases[k])
		}
		return ys
	}
	for k := range r.Phases {
		xs[k] = float64(r.Phases[k].ConnsOpen)
	}
	charts := []template.HTML{
		template.HTML(lineChart("Events delivered per second", "events/s", xs, []series{
			{"events/s", "#1f77b4", get(func(p *Phase) float64 { return p.EventsPerSec })},
		})),
		template.HTML(lineChart("Delivery and convergence", "%", xs, []series{
			{"delivery %", "#2ca02c", get(func(p *Phase) float64 { return float64(p.DeliveryPct) })},
			{"convergence %", "#9467bd", get(func(p *Phase) float64 { return float64(p.ConvergencePct) })},
		})),
		template.HTML(lineChart("Delivery latency", "ms", xs, []series{
			{"p50", "#1f77b4", get(func(p *Phase) float64 { return float64(p.LatencyP50Ms) })},
			{"p99", "#ff7f0e", get(func(p *Phase) float64 { return float64(p.LatencyP99Ms) })},
			{"p99.9", "#d62728", get(func(p *Phase) float64 { return float64(p.LatencyP999Ms) })},
		})),
		template.HTML(lineChart("Fanout memory per connection", "KiB", xs, []series{
			{"idle", "#8c564b", get(func(p *Phase) float64 { return float64(p.MemPerConnIdleB) / 1024 })},
			{"under load", "#e377c2", get(func(p *Phase) float64 { return float64(p.MemPerConnB) / 1024 })},
		})),
	}
	heads := make([]string, len(columns))
	for k, c := range columns {
		heads[k] = c.head
	}
	rows := make([][]string, len(r.Phases))
	for k := range r.Phases {
		for _, c := range columns {
			rows[k] = append(rows[k], c.value(&r.Phases[k]))
		}
	}
	return page.Execute(w, map[string]any{"R": r, "Charts": charts, "Heads": heads, "Rows": rows})
}

// style is the pages' shared CSS, inline so that a page loads nothing.
const style = `{{define "style"}}<style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4}td.l{text-align:left}.charts{display:flex;flex-wrap:wrap;gap:16px}
code{background:#f4f4f4;padding:1px 4px}
</style>{{end}}`

var page = template.Must(template.Must(template.New("report").Parse(style)).Funcs(template.FuncMap{
	"fmtf":     func(f Float, prec int) string { return f.format(prec) },
	"kib":      kib,
	"capacity": CapacityLine,
	"join":     func(s []string) string { return strings.Join(s, ", ") },
	"mib":      func(f Float) string { return (f / (1 << 20)).format(1) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>likes ramp {{.R.Started}}</title>
{{template "style"}}</head><body>
<h1>likes ramp</h1>
<p>Started {{.R.Started}} &middot; {{.R.Mode}} &middot; {{.R.Posts}} posts &middot; warmup {{.R.Warmup}}, window {{.R.Window}}
&middot; writer {{.R.Writer}} &middot; {{len .R.Nodes}} fanout node(s) &middot; generator on {{.R.GenCPUs}} CPU(s)</p>
<p><code>{{.R.Command}}</code></p>
{{with .R.Capacity}}<p class="capacity"><strong>{{capacity .}}</strong> ({{.Steps}} steps in {{.Seconds}} s; stopped: {{.Stopped}})</p>{{end}}
<p>Objective: <code>{{.R.Objective}}</code></p>
<div class="charts">{{range .Charts}}<div>{{.}}</div>{{end}}</div>
<h2>Phases</h2>
<p>Latencies in ms; CPU in % of one core; memory per connection: {{.R.MemMethod}}.</p>
<table><tr>{{range .Heads}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
<h2>Nodes</h2>
<table><tr><th>conns</th><th>node</th><th>viewers</th><th>CPU %</th><th>RSS MiB</th><th>KiB/conn idle</th><th>KiB/conn</th></tr>
{{range .R.Phases}}{{$c := .ConnsWanted}}{{range .Nodes}}<tr><td>{{$c}}</td><td class="l">{{.URL}}</td><td>{{fmtf .Viewers 0}}</td><td>{{fmtf .CPUPct 0}}</td><td>{{mib .RSSBytes}}</td><td>{{kib .MemPerConnIdleB}}</td><td>{{kib .MemPerConnB}}</td></tr>
{{end}}{{end}}</table>
<h2>Notes</h2><ul>{{range .R.Phases}}{{$c := .ConnsWanted}}{{if .Broke}}<li>{{$c}} conns: broke the objective: {{join .Broke}}</li>{{end}}{{range .Notes}}<li>{{$c}} conns: {{.}}</li>{{end}}{{end}}</ul>
</body></html>
`))

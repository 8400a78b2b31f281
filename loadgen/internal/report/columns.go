package report

import "strconv"

// column is one figure of a phase, shared by the table and the CSV so both carry the same set.
type column struct {
	head  string // table heading
	csv   string // CSV heading (the JSON field name)
	value func(*Phase) string
}

func i(n int) string      { return strconv.Itoa(n) }
func i64(n int64) string  { return strconv.FormatInt(n, 10) }
func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func kib(f Float) string  { return (f / 1024).format(2) }
func yes(b bool) string   { return map[bool]string{true: "yes", false: "no"}[b] }
func ms(f Float) string   { return f.format(2) }
func pct(f Float) string  { return f.format(2) }
func pct0(f Float) string { return f.format(0) }

var columns = []column{
	{"conns", "conns_wanted", func(p *Phase) string { return i(p.ConnsWanted) }},
	{"open", "conns_open", func(p *Phase) string { return i(p.ConnsOpen) }},
	{"failed", "conns_failed", func(p *Phase) string { return i(p.ConnsFailed) }},
	{"refused", "conns_refused", func(p *Phase) string { return i(p.ConnsRefused) }},
	{"dropped", "conns_dropped", func(p *Phase) string { return i(p.ConnsDropped) }},
	{"upd/s", "updates_per_viewer_per_sec", func(p *Phase) string { return rate(float64(p.UpdatesPerSec)) }},
	{"likes/s", "likes_per_sec", func(p *Phase) string { return f0(p.LikesPerSec) }},
	{"skipped", "likes_skipped", func(p *Phase) string { return i64(p.LikesSkipped) }},
	{"like err", "like_errors", func(p *Phase) string { return i64(p.LikeErrors) }},
	{"like p50", "like_p50_ms", func(p *Phase) string { return ms(p.LikeP50Ms) }},
	{"like p99", "like_p99_ms", func(p *Phase) string { return ms(p.LikeP99Ms) }},
	{"events/s", "events_per_sec", func(p *Phase) string { return f0(p.EventsPerSec) }},
	{"deliv %", "delivery_pct", func(p *Phase) string { return pct(p.DeliveryPct) }},
	{"conv %", "convergence_pct", func(p *Phase) string { return pct(p.ConvergencePct) }},
	{"lat p50", "latency_p50_ms", func(p *Phase) string { return ms(p.LatencyP50Ms) }},
	{"lat p95", "latency_p95_ms", func(p *Phase) string { return ms(p.LatencyP95Ms) }},
	{"lat p99", "latency_p99_ms", func(p *Phase) string { return ms(p.LatencyP99Ms) }},
	{"lat p99.9", "latency_p999_ms", func(p *Phase) string { return ms(p.LatencyP999Ms) }},
	{"nodes CPU%", "nodes_cpu_pct", func(p *Phase) string { return p.NodesCPUPct.format(1) }},
	{"events/node-CPU-s", "events_per_node_cpu_sec", func(p *Phase) string { return p.EventsPerNodeCPUSec.format(0) }},
	{"writer CPU%", "writer_cpu_pct", func(p *Phase) string { return pct0(p.WriterCPUPct) }},
	{"likes/writer-CPU-s", "likes_per_writer_cpu_sec", func(p *Phase) string { return p.LikesPerWriterCPUSec.format(0) }},
	{"redis CPU%", "redis_cpu_pct", func(p *Phase) string { return p.RedisCPUPct.format(1) }},
	{"redis us/like", "redis_us_per_like", func(p *Phase) string { return p.RedisMicrosPerLike.format(1) }},
	{"subs/post", "redis_subscribers", func(p *Phase) string { return subscribers(p.Subscribers) }},
	{"KiB/conn idle", "mem_per_conn_idle_kib", func(p *Phase) string { return kib(p.MemPerConnIdleB) }},
	{"KiB/conn", "mem_per_conn_kib", func(p *Phase) string { return kib(p.MemPerConnB) }},
	{"gen CPU%", "generator_cpu_pct", func(p *Phase) string { return pct0(p.GenCPUPct) }},
	{"gen cores busy%", "generator_cores_busy_pct", func(p *Phase) string { return pct0(p.GenCoreBusyPct) }},
	{"gen saturated", "generator_saturated", func(p *Phase) string { return yes(p.GenSaturated) }},
	{"gen B/viewer", "generator_mem_per_viewer_b", func(p *Phase) string { return p.GenMemPerViewerB.format(0) }},
	{"connect ms", "connect_ms", func(p *Phase) string { return i(p.ConnectMillis) }},
	{"connect node-CPU-us", "connect_node_cpu_us", func(p *Phase) string { return p.ConnectNodeCPUMicros.format(0) }},
	{"watching/s", "watching_per_sec", func(p *Phase) string { return f0(p.WatchingPerSec) }},
	{"watch reports/s", "watching_reports_per_sec", func(p *Phase) string { return p.WatchingReportsPerSec.format(0) }},
	// New columns go here, after the older ones: scripts read ramp.csv by position (floor.sh).
	{"probe likes/s", "write_probe_likes_per_sec", func(p *Phase) string { return probe(p, func(x *Probe) string { return f0(x.LikesPerSec) }) }},
	{"probe p99", "write_probe_like_p99_ms", func(p *Phase) string { return probe(p, func(x *Probe) string { return ms(x.LikeP99Ms) }) }},
	{"slo", "slo_broken", verdict},
}

// subscribers renders a phase's Redis subscribers per post, "4" or "3-4"; "-" when unread.
func subscribers(s *Subscribers) string {
	switch {
	case s == nil:
		return "-"
	case s.Min == s.Max:
		return i64(s.Max)
	}
	return i64(s.Min) + "-" + i64(s.Max)
}

// probe renders a figure of the phase's write probe, "-" without one.
func probe(p *Phase, f func(*Probe) string) string {
	if p.Probe == nil {
		return "-"
	}
	return f(p.Probe)
}

// verdict is "met" for a phase within the objective, else "broke"; the table's notes list what.
func verdict(p *Phase) string {
	if len(p.Broke) == 0 {
		return "met"
	}
	return "broke"
}

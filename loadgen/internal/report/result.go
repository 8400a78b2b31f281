package report

// Result is a whole ramp.
type Result struct {
	Started   string   `json:"started"` // RFC 3339
	Command   string   `json:"command"`
	Writer    string   `json:"writer"`
	Nodes     []string `json:"fanout_nodes"`
	Posts     int      `json:"posts"`
	Feed      int      `json:"feed"` // posts per viewer stream; 0: one post each
	Mode      string   `json:"mode"` // "closed loop, 500 writers" or "open loop, 2000 likes/s"
	Warmup    string   `json:"warmup"`
	Window    string   `json:"window"`
	Sources   int      `json:"source_addresses"`
	GenCPUs   int      `json:"generator_cpus"` // CPUs the generator may run on
	MemMethod string   `json:"mem_per_conn_method"`
	Phases    []Phase  `json:"phases"`
}

// Phase is one step of the ramp. Durations are milliseconds; NaN figures are written as null.
type Phase struct {
	ConnsWanted   int `json:"conns_wanted"`
	ConnsOpen     int `json:"conns_open"`
	ConnsFailed   int `json:"conns_failed"`
	ConnsRefused  int `json:"conns_refused"` // 503 from a node at its max-conns: capped, not lost
	ConnsDropped  int `json:"conns_dropped"` // open at the phase start, closed by the server since
	Workers       int `json:"workers"`
	ConnectMillis int `json:"connect_ms"`

	LikesPerSec float64 `json:"likes_per_sec"`
	LikesAcked  int64   `json:"likes_acked"`
	LikeErrors  int64   `json:"like_errors"`
	LikeP50Ms   Float   `json:"like_p50_ms"`
	LikeP99Ms   Float   `json:"like_p99_ms"`

	EventsPerSec   float64 `json:"events_per_sec"`
	EventsExpected int64   `json:"events_expected"`
	EventsReceived int64   `json:"events_received"`
	DeliveryPct    Float   `json:"delivery_pct"`

	ConvergencePct Float `json:"convergence_pct"`
	Converged      int   `json:"converged"`
	ConvergeTotal  int   `json:"converge_total"`
	ConvergeMillis int64 `json:"converge_ms"`
	LatencyP50Ms   Float `json:"latency_p50_ms"`
	LatencyP99Ms   Float `json:"latency_p99_ms"`
	LatencyP999Ms  Float `json:"latency_p999_ms"`
	LatencySamples int64 `json:"latency_samples"`
	GenCPUPct      Float `json:"generator_cpu_pct"` // all generator processes, % of one core
	GenCoreBusyPct Float `json:"generator_cores_busy_pct"`
	GenSaturated   bool  `json:"generator_saturated"`
	NodesCPUPct    Float `json:"nodes_cpu_pct"` // sum over nodes, % of one core
	// EventsPerNodeCPUSec is events delivered per second of fanout CPU (all nodes): the figure
	// to compare with a bare write loop on the same core.
	EventsPerNodeCPUSec Float `json:"events_per_node_cpu_sec"`
	WriterCPUPct        Float `json:"writer_cpu_pct"` // from the writer's /metrics; null without it
	// LikesPerWriterCPUSec is likes acknowledged per second of writer CPU: compare it with and
	// without viewers to see whether fan-out costs the write path anything.
	LikesPerWriterCPUSec Float `json:"likes_per_writer_cpu_sec"`
	MemPerConnIdleB      Float `json:"mem_per_conn_idle_bytes"`
	MemPerConnB          Float `json:"mem_per_conn_bytes"`
	// RedisCPUPct is redis-server's CPU over the window (INFO cpu), % of one core; null
	// without --redis.
	RedisCPUPct Float `json:"redis_cpu_pct"`
	// WatchingPerSec is watching events received per second by all viewers.
	WatchingPerSec float64 `json:"watching_per_sec"`
	// WatchingReportsPerSec is (post, interval) numbers all nodes added to Redis per second;
	// null when the nodes export no such counter.
	WatchingReportsPerSec Float `json:"watching_reports_per_sec"`

	Nodes []Node   `json:"nodes"`
	Posts []Post   `json:"posts"`
	Notes []string `json:"notes"`
}

// Node is one fanout node's figures in a phase.
type Node struct {
	URL             string `json:"url"`
	Viewers         Float  `json:"viewers"` // the node's own gauge at the end of the window
	CPUPct          Float  `json:"cpu_pct"`
	RSSBaseBytes    Float  `json:"rss_base_bytes"`  // at 0 viewers, before the ramp
	RSSIdleBytes    Float  `json:"rss_idle_bytes"`  // after connecting, before the likes
	RSSStartBytes   Float  `json:"rss_start_bytes"` // when the window opened (growth = rss - this)
	RSSBytes        Float  `json:"rss_bytes"`       // at the end of the window
	MemPerConnIdleB Float  `json:"mem_per_conn_idle_bytes"`
	MemPerConnB     Float  `json:"mem_per_conn_bytes"`
}

// Post is one post's delivery in a phase.
type Post struct {
	ID          string `json:"id"`
	Viewers     int    `json:"viewers"`
	Likes       int64  `json:"likes"` // counts in the measured range
	Received    int64  `json:"received"`
	DeliveryPct Float  `json:"delivery_pct"`
}

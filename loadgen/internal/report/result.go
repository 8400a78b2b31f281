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
	// RedisIdleCPUPct is Redis's CPU, % of one core, over a second before any load: what the
	// phases' Redis CPU per like leaves out. Null without --redis.
	RedisIdleCPUPct Float `json:"redis_idle_cpu_pct"`
	// Objective is the service level objective every phase was judged by (--slo).
	Objective string `json:"slo"`
	// Capacity is what --until-break found; nil for a ramp over fixed counts.
	Capacity *Capacity `json:"capacity,omitempty"`
	Phases   []Phase   `json:"phases"`
	// OneLike is one like to one post at the end, with every viewer still open (--one-like);
	// nil without it.
	OneLike *OneLike `json:"one_like,omitempty"`
	// ProbeAlone is the write probe before any viewer (--write-probe); nil without it.
	ProbeAlone *Probe `json:"write_probe_alone,omitempty"`
}

// Capacity is the largest load a deployment held within the objective, found by growing the
// load step by step until a step broke the objective and then narrowing down.
type Capacity struct {
	Grow      string `json:"grow"` // "conns" (viewers at a fixed update rate) or "rate"
	Objective string `json:"slo"`
	Nodes     int    `json:"nodes"`
	// Conns, UpdatesPerSec (per viewer), LikesPerSec (offered) and EventsPerSec (delivered) are
	// the last clean step's; all zero when no step was clean.
	Conns         int     `json:"conns"`
	UpdatesPerSec float64 `json:"updates_per_s"`
	LikesPerSec   float64 `json:"likes_per_s"`
	EventsPerSec  float64 `json:"events_per_s"`
	// Broke is the smallest load above the capacity that broke the objective; nil when every
	// step was clean (the search stopped at its step or time limit first).
	Broke *Step `json:"broke"`
	// Stopped says why the search ended: "within 10%", "max steps", "max time", "nothing clean"
	// (the first load tried, made smaller, still broke) or "interrupted".
	Stopped string  `json:"stopped"`
	Steps   int     `json:"steps"`
	Seconds float64 `json:"seconds"`
}

// Step is one load of a search and what it broke.
type Step struct {
	Conns         int      `json:"conns"`
	UpdatesPerSec float64  `json:"updates_per_s"`
	LikesPerSec   float64  `json:"likes_per_s"`
	EventsPerSec  float64  `json:"events_per_s"`
	Reasons       []string `json:"reasons"`
	LatencyP99Ms  Float    `json:"latency_p99_ms"`
	DeliveryPct   Float    `json:"delivery_pct"`
	Errors        int64    `json:"errors"`
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
	// ConnectNodeCPUMicros is the CPU all nodes spent while the phase's new viewers connected,
	// divided by them: what a connect costs a node, with whatever else it does meanwhile
	// (heartbeats, watching numbers); null when no viewer connected or a node's CPU is unread.
	ConnectNodeCPUMicros Float `json:"connect_node_cpu_us"`

	// OfferedLikesPerSec is the open loop's rate (0 in a closed loop), and UpdatesPerSec the
	// updates each viewer should see a second from it (rate / posts, times the posts of a feed).
	OfferedLikesPerSec float64 `json:"offered_likes_per_sec"`
	UpdatesPerSec      Float   `json:"updates_per_viewer_per_sec"`
	LikesPerSec        float64 `json:"likes_per_sec"`
	LikesAcked         int64   `json:"likes_acked"`
	// LikesSkipped are the open loop's likes not sent in the window because MaxInflight were
	// already waiting for the writer.
	LikesSkipped int64 `json:"likes_skipped"`
	LikeErrors   int64 `json:"like_errors"`
	LikeP50Ms    Float `json:"like_p50_ms"`
	LikeP99Ms    Float `json:"like_p99_ms"`
	// Probe is the write probe's likes in the window (--write-probe); nil without it. With it,
	// LikesPerWriterCPUSec and RedisMicrosPerLike count the probe's likes too.
	Probe *Probe `json:"write_probe,omitempty"`

	EventsPerSec   float64 `json:"events_per_sec"`
	EventsExpected int64   `json:"events_expected"`
	EventsReceived int64   `json:"events_received"`
	DeliveryPct    Float   `json:"delivery_pct"`

	ConvergencePct Float `json:"convergence_pct"`
	Converged      int   `json:"converged"`
	ConvergeTotal  int   `json:"converge_total"`
	ConvergeMillis int64 `json:"converge_ms"`
	LatencyP50Ms   Float `json:"latency_p50_ms"`
	LatencyP95Ms   Float `json:"latency_p95_ms"`
	LatencyP99Ms   Float `json:"latency_p99_ms"`
	LatencyP999Ms  Float `json:"latency_p999_ms"`
	LatencySamples int64 `json:"latency_samples"`
	GenCPUPct      Float `json:"generator_cpu_pct"` // all generator processes, % of one core
	GenCoreBusyPct Float `json:"generator_cores_busy_pct"`
	GenSaturated   bool  `json:"generator_saturated"`
	// GenMemBytes is the generator's resident memory at the phase's end: the workers' private
	// memory plus the coordinator's whole RSS (which holds the program's pages, shared by all),
	// so each page counts once; GenMemPerViewerB is that over the viewers open.
	GenMemBytes      Float `json:"generator_mem_bytes"`
	GenMemPerViewerB Float `json:"generator_mem_per_viewer_bytes"`
	NodesCPUPct      Float `json:"nodes_cpu_pct"` // sum over nodes, % of one core
	// EventsPerNodeCPUSec is events delivered per second of fanout CPU (all nodes): the figure
	// to compare with a bare write loop on the same core.
	EventsPerNodeCPUSec Float `json:"events_per_node_cpu_sec"`
	WriterCPUPct        Float `json:"writer_cpu_pct"` // from the writer's /metrics; null without it
	// LikesPerWriterCPUSec is likes acknowledged per second of writer CPU: compare it with and
	// without viewers to see whether fan-out costs the write path anything.
	LikesPerWriterCPUSec Float `json:"likes_per_writer_cpu_sec"`
	MemPerConnIdleB      Float `json:"mem_per_conn_idle_bytes"`
	MemPerConnB          Float `json:"mem_per_conn_bytes"`
	// RedisCPUPct is redis-server's CPU over the window (INFO cpu), % of one core, and
	// RedisMicrosPerLike that, less Redis's idle CPU (Result.RedisIdleCPUPct), divided by the
	// likes acknowledged; null without --redis.
	RedisCPUPct        Float `json:"redis_cpu_pct"`
	RedisMicrosPerLike Float `json:"redis_us_per_like"`
	// Subscribers are the Redis subscriptions of the ramp's posts at the end of the window; nil
	// without --redis.
	Subscribers *Subscribers `json:"redis_subscribers"`
	// WatchingPerSec is watching events received per second by all viewers.
	WatchingPerSec float64 `json:"watching_per_sec"`
	// WatchingReportsPerSec is (post, interval) numbers all nodes added to Redis per second;
	// null when the nodes export no such counter.
	WatchingReportsPerSec Float `json:"watching_reports_per_sec"`

	// Reactions are a reactions phase's own figures (loadgen ramp --react); nil for likes.
	Reactions *Reactions `json:"reactions,omitempty"`
	// Storm is the node loss of the phase (loadgen ramp --kill-cmd); nil without one.
	Storm *Storm `json:"storm,omitempty"`

	// Broke is what of the objective the phase broke (empty: it met the objective).
	Broke []string `json:"slo_broken"`

	Nodes []Node   `json:"nodes"`
	Posts []Post   `json:"posts"`
	Notes []string `json:"notes"`
}

// Storm is what a node's loss in the phase's window cost (--kill-cmd): its viewers reconnect at
// once to the other nodes. The phase's latency is that of the viewers who stayed; its delivery
// counts the moved viewers' frames, so what they missed while moving shows as lost.
type Storm struct {
	Command string `json:"command"`
	AfterMs int64  `json:"after_ms"` // into the window
	Moved   int    `json:"moved"`    // viewers whose stream ended and who reconnected
	// Admitted of them by the other nodes (200); Refused (503) and Failed did not get back.
	Admitted int `json:"admitted"`
	Refused  int `json:"refused"`
	Failed   int `json:"failed"`
	// CurrentMs runs from the first moved stream's end to the last admitted viewer's first
	// count (the node's snapshot, the newest): until every moved viewer was current.
	CurrentMs Float `json:"current_ms"`
}

// Reactions are what a reactions phase measured. In such a phase the like figures are the
// reactions' (likes/s is reactions acknowledged a second, like p99 a reaction request's), the
// latency is from a reaction's acknowledgement to the first frame at a viewer that includes it
// (on the sampled viewers, every reaction of the window at each), delivery is the window's
// reactions frames each viewer received against what its node displayed (the most any viewer of
// the post on that node received), and convergence includes each viewer's reaction counts
// reaching the stored totals.
type Reactions struct {
	Audience int   `json:"audience"` // people reacting
	Acked    int64 `json:"acked"`    // reactions acknowledged in the window
	// UpdatesPerSec is the updates the reactions made a second (distinct versions among the
	// window's acknowledgements): the writer's coalescer puts the reactions that arrive during a
	// post's script call into its next one.
	UpdatesPerSec float64 `json:"updates_per_sec"`
	// DisplayPerViewerPerSec is the reactions frames each viewer received a second, on average.
	DisplayPerViewerPerSec float64 `json:"display_updates_per_viewer_per_sec"`
	SampledViewers         int     `json:"sampled_viewers"`
	LatencySamples         int64   `json:"latency_samples"` // (reaction, sampled viewer) pairs
	// Missed are (reaction, sampled viewer) pairs with no frame that includes the reaction; they
	// enter the latency quantiles as a minute each.
	Missed int64 `json:"missed"`
}

// Subscribers compares, over the ramp's posts, each post's subscribers in Redis (PUBSUB NUMSUB,
// or SHARDNUMSUB summed over a Cluster's shards) with the fanout nodes holding viewers of it:
// each node subscribes once per post, however many viewers it holds, so the two are equal and a
// like costs Redis one message per node, not per viewer.
type Subscribers struct {
	Min      int64 `json:"min"`         // fewest subscribers of a post
	Max      int64 `json:"max"`         // most subscribers of a post
	Mismatch int   `json:"mismatch"`    // posts whose subscribers differ from their nodes
	NodesMax int   `json:"nodes_max"`   // most nodes holding viewers of one post
	Viewers  int   `json:"viewers_max"` // most viewers of one post, for scale
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

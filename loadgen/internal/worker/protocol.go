package worker

import "github.com/likes/likes/loadgen/internal/hist"

// Request is one command from the coordinator, a JSON line on the worker's stdin. Each request
// gets exactly one Reply line on stdout, in order.
type Request struct {
	Op       string       `json:"op"` // one of the Op* constants
	Init     *Init        `json:"init,omitempty"`
	Connect  *Connect     `json:"connect,omitempty"`
	Begin    *Begin       `json:"begin,omitempty"`
	Converge *Converge    `json:"converge,omitempty"`
	Report   *ReportRange `json:"report,omitempty"`
}

// Operations a worker understands.
const (
	OpInit     = "init"     // configure; must come first
	OpConnect  = "connect"  // start connecting viewers (returns at once; poll status)
	OpStatus   = "status"   // counters now
	OpAbandon  = "abandon"  // give up on viewers still connecting
	OpBegin    = "begin"    // start a phase's measurement
	OpConverge = "converge" // wait until viewers show the final counts
	OpReport   = "report"   // a phase's deliveries and latencies
	OpQuit     = "quit"     // close every viewer and exit
)

// Init configures a worker: where viewers connect and what they watch. A viewer's global index i
// decides its post (i mod posts), its node ((i / posts) mod nodes, so every post has viewers on
// every node) and its source address (i mod sources). With Feed > 1 the viewer follows Feed
// posts on one /sse?posts= stream: post i mod posts and the Feed-1 after it (wrapping around).
type Init struct {
	Nodes         []string `json:"nodes"`   // fanout base URLs
	Sources       []string `json:"sources"` // local source IPs; empty = kernel's choice
	Posts         []string `json:"posts"`
	Feed          int      `json:"feed,omitempty"` // posts per stream; 0 or 1: one post, /sse/{post}
	ReadBuffer    int      `json:"read_buffer"`
	DialTimeoutMS int      `json:"dial_timeout_ms"`
	// Reconnect makes an open viewer whose stream ends (its node died) reconnect at once, once,
	// to another node, as a load balancer sends a lost node's viewers to the others: a node
	// loss's reconnect storm (Status.Moved*).
	Reconnect bool `json:"reconnect,omitempty"`
}

// Connect asks for viewers with global indexes First .. First+Count-1, started at Rate per second
// (0 = as fast as the handshake limit allows).
type Connect struct {
	First int     `json:"first"`
	Count int     `json:"count"`
	Rate  float64 `json:"rate"`
}

// Begin starts a phase: Base[p] is post p's count before the phase's likes, and only events whose
// ts lies in [WindowStartUS, WindowEndUS) enter the latency histogram.
type Begin struct {
	Base          []int64 `json:"base"`
	WindowStartUS int64   `json:"window_start_us"`
	WindowEndUS   int64   `json:"window_end_us"`
	// SampleViewers is how many of the phase's single-post viewers keep the arrival of every
	// frame from the window's start on (Report.Sampled): the latency from a like's or reaction's
	// acknowledgement to the first frame that includes it is measured on them.
	SampleViewers int `json:"sample_viewers,omitempty"`
}

// Converge asks how many of the phase's viewers show Final[p] for every post they follow,
// waiting up to TimeoutMS for all of them to.
type Converge struct {
	Final     []int64 `json:"final"`
	TimeoutMS int     `json:"timeout_ms"`
	// FinalReactions, in a reactions phase, is each post's stored reactions of all kinds: a
	// viewer has converged when the counts of its newest reactions event add up to it too.
	FinalReactions []int64 `json:"final_reactions,omitempty"`
}

// ReportRange asks for the deliveries of the counts in (Lo[p], Hi[p]] of each post p.
type ReportRange struct {
	Lo []int64 `json:"lo"`
	Hi []int64 `json:"hi"`
}

// Reply answers one Request. Error is set when the request failed.
type Reply struct {
	Error    string         `json:"error,omitempty"`
	Status   *Status        `json:"status,omitempty"`
	Begin    *BeginReply    `json:"begin,omitempty"`
	Converge *ConvergeReply `json:"converge,omitempty"`
	Report   *Report        `json:"report,omitempty"`
}

// Status is a worker's counters, cumulative since it started.
type Status struct {
	Wanted    int   `json:"wanted"` // viewers asked for
	Pending   int   `json:"pending"`
	Open      int   `json:"open"`
	Failed    int   `json:"failed"`
	Refused   int   `json:"refused"`
	Dropped   int   `json:"dropped"`
	Events    int64 `json:"events"`
	Watching  int64 `json:"watching"`  // watching events (not counted in Events)
	Reactions int64 `json:"reactions"` // reactions events (not counted in Events)
	Malformed int64 `json:"malformed"`
	CPUMicros int64 `json:"cpu_us"`
	// PrivateBytes is the worker's private resident memory (procstat.Memory: heap, stacks, the
	// runtime's own; not the program's pages, which all workers share).
	PrivateBytes int64          `json:"private_bytes"`
	AtUS         int64          `json:"at_us"`
	Errors       map[string]int `json:"errors,omitempty"`
	NoFileSoft   uint64         `json:"nofile_soft"`
	// With Init.Reconnect: viewers whose stream ended and who reconnected elsewhere (not counted
	// in Dropped), how many of them the other nodes admitted (a head that said 200; a refusal
	// counts in Refused, a failure in Failed), and, in unix microseconds, when the first stream
	// ended and when the last of the admitted got its first count (the newest, from the node's
	// snapshot): the storm's length.
	Moved          int   `json:"moved,omitempty"`
	MovedOpen      int   `json:"moved_open,omitempty"`
	MovedFirstUS   int64 `json:"moved_first_us,omitempty"`
	MovedCurrentUS int64 `json:"moved_current_us,omitempty"`
}

// BeginReply gives the viewers of each post that the phase measures (those open at Begin); a
// feed viewer counts once for each of its posts.
type BeginReply struct {
	Viewers []int `json:"viewers"`
	Open    int   `json:"open"` // viewers the phase measures
}

// ConvergeReply says how many of the phase's viewers showed the final count, and when the last of
// them did (or the timeout).
type ConvergeReply struct {
	Converged int   `json:"converged"`
	Total     int   `json:"total"`
	ElapsedMS int64 `json:"elapsed_ms"`
}

// Report is a phase's deliveries per post and its delivery latency histogram (microseconds).
type Report struct {
	Received []int64     `json:"received"`
	Overflow int64       `json:"overflow"`
	Latency  hist.Sparse `json:"latency"`
	// Displays are the frames of the window (by ts) that the phase's single-post viewers
	// received, per post and node.
	Displays []Display `json:"displays,omitempty"`
	// Sampled are the sampled viewers' frames (Begin.SampleViewers).
	Sampled []Sampled `json:"sampled,omitempty"`
}

// Display is what the phase's viewers of one post on one node received of the frames whose ts
// lies in the window: how many viewers received how many frames.
type Display struct {
	Post    int `json:"post"`
	Node    int `json:"node"`
	Viewers int `json:"viewers"`
	// Frames maps a number of frames to the viewers that received that many.
	Frames map[int64]int `json:"frames"`
}

// Sampled is one sampled viewer's frames since the window's start, as [count, ts, arrival] (ts
// and arrival in unix microseconds), in the order they came.
type Sampled struct {
	Post   int        `json:"post"`
	Frames [][3]int64 `json:"frames"`
}

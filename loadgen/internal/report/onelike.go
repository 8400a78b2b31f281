package report

import "fmt"

// OneLike is how one like reaches every viewer of its post (--one-like): the whole audience of
// a post, not a sample. Latencies run from the like's version (the time Redis stored it, the
// frame's ts) to each viewer's frame.
type OneLike struct {
	Post      string `json:"post"`
	Viewers   int    `json:"viewers"`   // the post's viewers open when the like was sent
	Delivered int64  `json:"delivered"` // viewers whose frame of it arrived
	// Converged of ConvergeTotal viewers (every post's) showed their posts' counts, this like's
	// included, within the converge timeout.
	Converged     int   `json:"converged"`
	ConvergeTotal int   `json:"converge_total"`
	AckMs         Float `json:"ack_ms"` // from sending the like to its answer
	P50Ms         Float `json:"p50_ms"`
	P99Ms         Float `json:"p99_ms"`
	// LastMs is when the last viewer's frame came (the histogram's top bucket, within 3%).
	LastMs Float  `json:"last_ms"`
	Error  string `json:"error,omitempty"` // the like failed: nothing was measured
}

// OneLikeLine is the one-line account of o: "one like to post p (N viewers): ...".
func OneLikeLine(o *OneLike) string {
	head := fmt.Sprintf("one like to post %s (%s viewers)", o.Post, thousands(float64(o.Viewers)))
	if o.Error != "" {
		return head + ": the like failed: " + o.Error
	}
	return fmt.Sprintf("%s: delivered to %s; answered in %s ms; the last viewer had it %s ms after Redis stored it "+
		"(p50 %s ms, p99 %s ms); %s of %s viewers of all posts current", head, thousands(float64(o.Delivered)),
		o.AckMs.format(1), o.LastMs.format(0), o.P50Ms.format(0), o.P99Ms.format(0),
		thousands(float64(o.Converged)), thousands(float64(o.ConvergeTotal)))
}

package report

import "fmt"

// Probe is what the writer did with the write probe's likes (--write-probe: a fixed rate of
// likes to posts that no viewer watches) over a window, alone before any viewer or beside a
// phase's viewers and likes: whether fanning out to the viewers costs the write path anything.
type Probe struct {
	Rate        float64 `json:"rate"`          // likes/s offered
	LikesPerSec float64 `json:"likes_per_sec"` // acknowledged
	Errors      int64   `json:"errors"`
	LikeP99Ms   Float   `json:"like_p99_ms"`
	// WriterCPUPct is all writers' CPU over the window, % of one core, and LikesPerWriterCPUSec
	// every like acknowledged in it (the probe's and, beside a phase, the phase's) per second of
	// it; RedisMicrosPerLike is Redis's CPU, less its idle, per like (null without --redis).
	WriterCPUPct         Float `json:"writer_cpu_pct"`
	LikesPerWriterCPUSec Float `json:"likes_per_writer_cpu_sec"`
	RedisMicrosPerLike   Float `json:"redis_us_per_like"`
}

// ProbeLine is the one-line account of the write probe alone.
func ProbeLine(p *Probe) string {
	return fmt.Sprintf("write probe alone (no viewer yet): %s likes/s offered, %s acknowledged (%d failed), like p99 %s ms; "+
		"writer CPU %s%%, %s likes per writer CPU-second; Redis %s us per like", rate(p.Rate), thousands(p.LikesPerSec), p.Errors,
		p.LikeP99Ms.format(2), p.WriterCPUPct.format(0), p.LikesPerWriterCPUSec.format(0), p.RedisMicrosPerLike.format(1))
}

package hub

import "time"

// The display budget's defaults (fanout-svc's DISPLAY_BUDGET and DISPLAY_MIN_RATE), from the room
// measurements in docs/BENCHMARKS.md ("Reactions at conference scale").
const (
	DefaultDisplayBudget  = 24000
	DefaultDisplayMinRate = 4
)

// minDisplayGap is the shortest gap between two displayed updates worth holding a post for: a
// display rate above 100 a second is none a person sees, so a post the budget would allow more
// (fewer than 240 viewers a node by default) sees every update, and its likes are judged one by
// one, as before the budget.
const minDisplayGap = int64(10 * time.Millisecond)

// displayGap is the least time, in nanoseconds, between two updates of sp shown to its viewers on
// this loop, or 0 when every update goes out.
//
// A fixed PostRate gives 1/PostRate. Otherwise the display budget spreads what one post may cost
// the node: sp's viewers on this loop, times the loops (the hub spreads viewers evenly), must
// cost at most DisplayBudget frames a second, so a room of 800 gets 30 updates a second under the
// default budget of 24,000 and a hall of 10,000 gets the DisplayMinRate floor, while a post with
// a few hundred viewers sees every update. The cost a busy post puts on a node is thus about
// max(DisplayBudget, viewers x DisplayMinRate) frames a second, whatever its likes and reactions
// per second; every viewer still gets the newest value, within one gap.
func (s *loop) displayGap(sp *loopPost) int64 {
	if s.cfg.PostRate > 0 {
		return int64(float64(time.Second) / s.cfg.PostRate)
	}
	if s.cfg.DisplayBudget <= 0 {
		return 0
	}
	gap := float64(len(sp.members)*s.cfg.Loops) / s.cfg.DisplayBudget * float64(time.Second)
	if s.cfg.DisplayMinRate > 0 {
		gap = min(gap, float64(time.Second)/s.cfg.DisplayMinRate)
	}
	if int64(gap) < minDisplayGap {
		return 0
	}
	return int64(gap)
}

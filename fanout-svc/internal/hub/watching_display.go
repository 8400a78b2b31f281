package hub

// A "watching now" number is read by people, who can tell 998 from 999 but not 12,345 from
// 12,300. Sending every change of a large number would cost a frame per viewer per interval (the
// total moves every interval with any churn) for a difference nobody sees; rounding it makes a
// large post's number change only when it moved visibly.

// exactBelow is the number of viewers under which a watching number is shown exactly.
const exactBelow = 1000

// displayWatching returns the watching number viewers are shown for the true total n, given the
// one they are shown now (shown; negative: none yet). Below exactBelow it is n itself. From
// exactBelow on it is n rounded to three significant digits (12,345 -> 12,300: at most 0.5% off),
// except that the shown number stays as long as n is within three quarters of a rounding step of
// it: a total that hovers around the midpoint between two steps (12,349, 12,351, ...) then does
// not flip the display every interval, and what is shown stays within 0.75% of n.
func displayWatching(shown, n int64) int64 {
	if n < exactBelow {
		return n
	}
	step := int64(1)
	for n/step >= exactBelow {
		step *= 10
	}
	if shown >= exactBelow && 4*absDiff(n, shown) < 3*step {
		return shown
	}
	return (n + step/2) / step * step
}

func absDiff(a, b int64) int64 {
	if a < b {
		return b - a
	}
	return a - b
}

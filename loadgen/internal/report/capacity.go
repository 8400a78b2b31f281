package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// CapacityLine says in one line what a search found, e.g. "capacity: 6,400 viewers x 10
// updates/s = 64,000 events/s on 4 nodes; broke at 8,000: p99 340 ms > 100 ms".
func CapacityLine(c *Capacity) string {
	on := " on " + plural(c.Nodes, "node")
	if c.Conns == 0 {
		line := "capacity: none within " + c.Objective + on
		if c.Broke != nil {
			line += fmt.Sprintf("; the smallest load tried, %s viewers x %s updates/s, broke it: %s",
				thousands(float64(c.Broke.Conns)), rate(c.Broke.UpdatesPerSec), strings.Join(c.Broke.Reasons, ", "))
		}
		return line
	}
	line := fmt.Sprintf("capacity: %s viewers x %s updates/s = %s events/s%s", thousands(float64(c.Conns)),
		rate(c.UpdatesPerSec), thousands(c.EventsPerSec), on)
	if c.Broke == nil {
		return "capacity: at least " + strings.TrimPrefix(line, "capacity: ") + "; no step broke " + c.Objective + " (stopped: " + c.Stopped + ")"
	}
	at := thousands(float64(c.Broke.Conns))
	if c.Grow == "rate" {
		at = rate(c.Broke.UpdatesPerSec) + " updates/s"
	}
	return line + "; broke at " + at + ": " + strings.Join(c.Broke.Reasons, ", ")
}

// thousands renders a count with thousands separators, rounded: 64000 -> "64,000".
func thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for k, d := range s {
		if k > 0 && (len(s)-k)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// rate renders an update rate with the decimals it needs: 10, 4.5, 0.25.
func rate(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

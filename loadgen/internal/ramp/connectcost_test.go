package ramp

import (
	"math"
	"testing"
	"time"

	"github.com/likes/likes/loadgen/internal/nodemetrics"
)

func TestConnectCost(t *testing.T) {
	at := time.Unix(100, 0)
	before := []nodemetrics.Sample{{At: at, CPUSeconds: 1}, {At: at, CPUSeconds: 2}}
	after := []nodemetrics.Sample{{At: at.Add(time.Second), CPUSeconds: 1.1}, {At: at.Add(time.Second), CPUSeconds: 2.3}}
	if got := connectCost(before, after, 2000); math.Abs(got-200) > 1e-9 {
		t.Errorf("0.4 CPU-s over 2,000 connects = %v µs each; want 200", got)
	}
	for name, c := range map[string]struct {
		after     []nodemetrics.Sample
		connected int
	}{
		"no connects":   {after, 0},
		"a node unread": {[]nodemetrics.Sample{after[0], {}}, 2000},
		"nodes differ":  {after[:1], 2000},
	} {
		if got := connectCost(before, c.after, c.connected); !math.IsNaN(got) {
			t.Errorf("%s: %v; want NaN", name, got)
		}
	}
}

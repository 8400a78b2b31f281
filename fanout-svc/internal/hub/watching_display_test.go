package hub

import "testing"

// TestDisplayWatching pins what viewers are shown: exact small numbers, three significant digits
// for large ones, and the hysteresis that keeps a hovering total from flapping.
func TestDisplayWatching(t *testing.T) {
	tests := []struct {
		name     string
		shown, n int64
		want     int64
	}{
		{"first number, small", -1, 7, 7},
		{"zero", 5, 0, 0},
		{"below 1,000 every change shows", 998, 999, 999},
		{"below 1,000 exact even from a rounded number", 1000, 999, 999},
		{"1,000 itself", 999, 1000, 1000},
		{"first number, large: three significant digits", -1, 12345, 12300},
		{"rounds half up", -1, 12350, 12400},
		{"same displayed value", 12300, 12340, 12300},
		{"a move within the hysteresis keeps the number", 12300, 12370, 12300},
		{"a move past three quarters of a step changes it", 12300, 12380, 12400},
		{"hovering at the midpoint does not flap (up)", 12300, 12351, 12300},
		{"hovering at the midpoint does not flap (down)", 12400, 12349, 12400},
		{"four digits, step 10", 1000, 1008, 1010},
		{"four digits within hysteresis", 1000, 1007, 1000},
		{"a decade up", 9990, 10004, 9990},
		{"a decade up, far", 9990, 10080, 10100},
		{"a decade down", 10000, 9996, 10000},
		{"a big jump", 12300, 50049, 50000},
		{"millions", -1, 1234567, 1230000},
		{"rounds to the next power of ten", -1, 999500, 1000000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := displayWatching(tt.shown, tt.n)
			if got != tt.want {
				t.Errorf("displayWatching(%d, %d) = %d; want %d", tt.shown, tt.n, got, tt.want)
			}
		})
	}
}

// TestDisplayWatchingIsClose checks the promise the display makes over a walk of totals: exact
// below 1,000, within 1% of the true total above.
func TestDisplayWatchingIsClose(t *testing.T) {
	shown := int64(-1)
	for n := int64(0); n < 2_000_000; n += 1 + n/500 {
		for _, m := range []int64{n, n + n/300, n} { // up and back down: the hysteresis's worst case
			shown = displayWatching(shown, m)
			if m < exactBelow && shown != m {
				t.Fatalf("total %d shown as %d; want it exact", m, shown)
			}
			if off := absDiff(shown, m); 100*off > m {
				t.Fatalf("total %d shown as %d: %.2f%% off; want at most 1%%", m, shown, 100*float64(off)/float64(m))
			}
		}
	}
}

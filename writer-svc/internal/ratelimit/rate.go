package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a token bucket: N events per window on average, and up to Burst at once. The zero
// Rate is "no limit"; a Burst of 0 means N (a full window's allowance may be spent at once, and
// then one event every Window/N).
type Rate struct {
	N      int
	Window time.Duration
	Burst  int
}

// Limits on what ParseRate accepts, so a typo cannot create a key that lives for a year or a
// counter that never trips.
const (
	MinWindow = time.Millisecond
	MaxWindow = 24 * time.Hour
	MaxN      = 1_000_000
)

// ErrRate explains the accepted form of a rate.
var ErrRate = errors.New(`rate must look like "1/3s", "10/m" or "30/1m burst 10": N per duration (1ms-24h), N and the burst 1-1000000`)

// Off reports whether r imposes no limit.
func (r Rate) Off() bool { return r.N == 0 }

// BurstSize is how many events may come at once: Burst, or N when Burst is not set.
func (r Rate) BurstSize() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return r.N
}

// Interval is the time one event's allowance takes to come back: Window/N.
func (r Rate) Interval() time.Duration { return r.Window / time.Duration(r.N) }

// String formats r as ParseRate reads it ("" when off).
func (r Rate) String() string {
	if r.Off() {
		return ""
	}
	s := strconv.Itoa(r.N) + "/" + r.Window.String()
	if r.Burst > 0 {
		s += " burst " + strconv.Itoa(r.Burst)
	}
	return s
}

// ParseRate reads "N/duration", for example "1/3s", "5/1m" or "10/m" (a bare unit means one of
// it), optionally followed by " burst B": "30/1m burst 10" is 30 a minute, 10 at once. "off" or
// the empty string means no limit ("off" is how an environment variable, where empty means unset,
// turns a limit that is on by default off).
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "off") {
		return Rate{}, nil
	}
	burst := 0
	if head, b, ok := strings.Cut(s, "burst"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || n < 1 || n > MaxN {
			return Rate{}, ErrRate
		}
		s, burst = strings.TrimSpace(head), n
	}
	r, err := parseAverage(s)
	r.Burst = burst
	return r, err
}

// parseAverage reads the "N/duration" part of a rate.
func parseAverage(s string) (Rate, error) {
	count, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, ErrRate
	}
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n < 1 || n > MaxN {
		return Rate{}, ErrRate
	}
	window, err := parseWindow(strings.TrimSpace(per))
	if err != nil {
		return Rate{}, err
	}
	// The bucket counts in microseconds of Redis's clock.
	if window/time.Duration(n) < time.Microsecond {
		return Rate{}, fmt.Errorf("%w (%d per %s is more than one a microsecond)", ErrRate, n, window)
	}
	return Rate{N: n, Window: window}, nil
}

func parseWindow(s string) (time.Duration, error) {
	switch s {
	case "ms", "s", "m", "h":
		s = "1" + s
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < MinWindow || d > MaxWindow {
		return 0, fmt.Errorf("%w (got window %q)", ErrRate, s)
	}
	return d, nil
}

package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is N events per window. The zero Rate is "no limit".
type Rate struct {
	N      int
	Window time.Duration
}

// Limits on what ParseRate accepts, so a typo cannot create a key that lives for a year or a
// counter that never trips.
const (
	MinWindow = time.Millisecond
	MaxWindow = 24 * time.Hour
	MaxN      = 1_000_000
)

// ErrRate explains the accepted form of a rate.
var ErrRate = errors.New(`rate must look like "1/3s" or "10/m": N per duration (1ms-24h), N 1-1000000`)

// Off reports whether r imposes no limit.
func (r Rate) Off() bool { return r.N == 0 }

// String formats r as ParseRate reads it ("" when off).
func (r Rate) String() string {
	if r.Off() {
		return ""
	}
	return strconv.Itoa(r.N) + "/" + r.Window.String()
}

// ParseRate reads "N/duration", for example "1/3s", "5/1m" or "10/m" (a bare unit means one of
// it). The empty string means no limit.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Rate{}, nil
	}
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

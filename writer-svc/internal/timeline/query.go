package timeline

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// The range a timeline query may name, in unix seconds: from 1970-01-01T00:00:00Z (MinTime) to
// 9999-12-31T23:59:59Z (MaxTime), both from and to. The year 9999 is the last an RFC 3339 time
// can spell, so every second accepted as a number has an RFC 3339 form and the other way round;
// a bound that does not depend on the clock also keeps a query's answer the same on every writer
// and lets a fuzz target check it without a clock. At about 2^38, MaxTime keeps every derived
// value (minute*60, (minute+1)*60, an offset times counterBytes, from+steps*step) more than 2^24
// times below int64's overflow. Times outside what a writer stores read as zero, as they did.
const (
	MinTime int64 = 0
	MaxTime int64 = 253402300799
)

// The step a timeline query may name: MinStep to MaxStep seconds. A step longer than the range
// asked gives one step that covers it.
const (
	MinStep = int64(1)
	MaxStep = int64(MaxSpan / time.Second)
)

// MaxMinutes is the most minutes one read spans: a MaxSpan range that starts mid-minute ends in
// the minute after its last whole one. MaxCommands (per reaction kind count) follows from it.
const MaxMinutes = int64(MaxSpan/time.Minute) + 1

// MaxCommands is the most Redis commands one timeline read may send for kinds reaction kinds:
// one GETRANGE per minute and series (likes, unlikes and each kind). Reader.Read refuses a read
// past it rather than send it.
func MaxCommands(kinds int) int64 { return MaxMinutes * int64(2+kinds) }

// Query is a timeline request's parameters, each within its documented range.
type Query struct {
	From, To, Step int64  // unix seconds, To excluded; seconds
	Format         string // "json" or "csv"
}

// maxEcho bounds how much of a refused value an error message repeats.
const maxEcho = 40

// ParseQuery reads ?from=&to=&step=&format= against now: from and to are unix seconds or RFC 3339
// times within [MinTime, MaxTime] (to excluded; default the DefaultSpan up to now's second
// included), step whole seconds or a Go duration of whole seconds within [MinStep, MaxStep]
// (default: at most defaultPoints steps), format json or csv (default json; accept decides when
// it says text/csv). The range is at most MaxSpan and MaxPoints steps. Each parameter may be given
// once. Every error wraps errQuery and names the allowed range.
func ParseQuery(q url.Values, now time.Time, acceptCSV bool) (Query, error) {
	for _, name := range []string{"from", "to", "step", "format"} {
		if n := len(q[name]); n > 1 {
			return Query{}, fmt.Errorf("%w: %s given %d times: give it once", errQuery, name, n)
		}
	}
	format, err := parseFormat(q.Get("format"), acceptCSV)
	if err != nil {
		return Query{}, err
	}
	to := min(max(now.Unix(), MinTime), MaxTime-1) + 1 // the current second included
	if v := q.Get("to"); v != "" {
		if to, err = parseTime(v); err != nil {
			return Query{}, fmt.Errorf("%w: to: %w", errQuery, err)
		}
	}
	from := max(to-int64(DefaultSpan/time.Second), MinTime)
	if v := q.Get("from"); v != "" {
		if from, err = parseTime(v); err != nil {
			return Query{}, fmt.Errorf("%w: from: %w", errQuery, err)
		}
	}
	span := to - from // both within [MinTime, MaxTime]: no overflow
	switch {
	case span <= 0:
		return Query{}, fmt.Errorf("%w: from %d is not before to %d", errQuery, from, to)
	case span > MaxStep:
		return Query{}, fmt.Errorf("%w: %d s asked; at most %d s (%v) at a time", errQuery, span, MaxStep, MaxSpan)
	}
	step := (span + defaultPoints - 1) / defaultPoints
	if v := q.Get("step"); v != "" {
		if step, err = parseStep(v); err != nil {
			return Query{}, fmt.Errorf("%w: step: %w", errQuery, err)
		}
	}
	if points := stepsIn(span, step); points > MaxPoints {
		return Query{}, fmt.Errorf("%w: %d steps asked; at most %d: a step of at least %d s", errQuery, points, MaxPoints, stepsIn(span, MaxPoints))
	}
	return Query{From: from, To: to, Step: step, Format: format}, nil
}

// stepsIn is how many steps of step seconds cover span seconds (both at least 1), without the
// overflow of span+step-1 for a step near int64's end.
func stepsIn(span, step int64) int64 { return (span-1)/step + 1 }

// parseFormat reads ?format=: json or csv; absent, csv when the Accept header asks for it.
func parseFormat(v string, acceptCSV bool) (string, error) {
	switch {
	case v == "json" || v == "csv":
		return v, nil
	case v != "":
		return "", fmt.Errorf("%w: format %q: want json or csv", errQuery, echo(v))
	case acceptCSV:
		return "csv", nil
	}
	return "json", nil
}

// errTimeRange is the allowed range of from and to, for error messages.
var errTimeRange = fmt.Errorf("want unix seconds from %d to %d, or an RFC 3339 time from %s to %s",
	MinTime, MaxTime, time.Unix(MinTime, 0).UTC().Format(time.RFC3339), time.Unix(MaxTime, 0).UTC().Format(time.RFC3339))

// parseTime reads unix seconds or an RFC 3339 time within [MinTime, MaxTime]. A number too long
// for int64 is no RFC 3339 time either: out of range like the others.
func parseTime(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t, terr := time.Parse(time.RFC3339, v)
		if terr != nil {
			return 0, fmt.Errorf("%q: %w", echo(v), errTimeRange)
		}
		n = t.Unix()
	}
	if n < MinTime || n > MaxTime {
		return 0, fmt.Errorf("%q: %w", echo(v), errTimeRange)
	}
	return n, nil
}

// parseStep reads whole seconds or a Go duration of whole seconds within [MinStep, MaxStep].
func parseStep(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil || d%time.Second != 0 {
			return 0, fmt.Errorf("%q: want whole seconds from %d to %d, such as 10 or 1m", echo(v), MinStep, MaxStep)
		}
		n = int64(d / time.Second)
	}
	if n < MinStep || n > MaxStep {
		return 0, fmt.Errorf("%q: want whole seconds from %d to %d (%v)", echo(v), MinStep, MaxStep, MaxSpan)
	}
	return n, nil
}

// echo is v cut to maxEcho bytes, for an error message: a refused value of a megabyte is not
// sent back whole.
func echo(v string) string {
	if len(v) <= maxEcho {
		return v
	}
	return v[:maxEcho] + "..."
}

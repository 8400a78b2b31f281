package report

import (
	"math"
	"strconv"
)

// Float is a figure that may be unknown (NaN): JSON has no NaN, so it is written as null.
type Float float64

// MarshalJSON writes NaN and infinities as null and other values with up to 3 decimals.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, math.Round(v*1000)/1000, 'f', -1, 64), nil
}

// UnmarshalJSON reads null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*f = Float(v)
	return err
}

// Known reports whether f is a number.
func (f Float) Known() bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// format renders f with prec decimals, or "-" when unknown.
func (f Float) format(prec int) string {
	if !f.Known() {
		return "-"
	}
	return strconv.FormatFloat(float64(f), 'f', prec, 64)
}

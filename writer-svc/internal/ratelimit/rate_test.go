package ratelimit

import (
	"errors"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		give    string
		want    Rate
		wantErr bool
	}{
		{give: "", want: Rate{}},
		{give: "  ", want: Rate{}},
		{give: "off", want: Rate{}},
		{give: " OFF ", want: Rate{}},
		{give: "1/3s", want: Rate{N: 1, Window: 3 * time.Second}},
		{give: "10/m", want: Rate{N: 10, Window: time.Minute}},
		{give: " 5 / 1m30s ", want: Rate{N: 5, Window: 90 * time.Second}},
		{give: "100/ms", want: Rate{N: 100, Window: time.Millisecond}},
		{give: "30/1m burst 10", want: Rate{N: 30, Window: time.Minute, Burst: 10}},
		{give: "30/m burst10", want: Rate{N: 30, Window: time.Minute, Burst: 10}},
		{give: "30/1m burst", wantErr: true},
		{give: "30/1m burst 0", wantErr: true},
		{give: "30/1m burst x", wantErr: true},
		{give: "burst 3", wantErr: true},
		{give: "1000000/1ms", wantErr: true},
		{give: "1", wantErr: true},
		{give: "0/1s", wantErr: true},
		{give: "-1/1s", wantErr: true},
		{give: "1/0s", wantErr: true},
		{give: "1/-3s", wantErr: true},
		{give: "1/100us", wantErr: true},
		{give: "1/25h", wantErr: true},
		{give: "1000001/s", wantErr: true},
		{give: "1/3", wantErr: true},
		{give: "a/3s", wantErr: true},
		{give: "1/3s/2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := ParseRate(tt.give)
			if tt.wantErr {
				if !errors.Is(err, ErrRate) {
					t.Errorf("got %+v, %v; want ErrRate", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// FuzzParseRate: any input either fails with ErrRate or yields a rate within the limits that
// formats and parses back to itself.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"", "1/3s", "10/m", "5/1m30s", "1/", "/s", "9999999/h", "1/1ns", "30/1m burst 10", "1/s burst"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			if !errors.Is(err, ErrRate) {
				t.Fatalf("ParseRate(%q): error %v is not ErrRate", s, err)
			}
			return
		}
		if r.Off() {
			return
		}
		if r.N < 1 || r.N > MaxN || r.Window < MinWindow || r.Window > MaxWindow || r.Burst < 0 || r.Burst > MaxN || r.Interval() < time.Microsecond {
			t.Fatalf("ParseRate(%q) = %+v: out of limits", s, r)
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %+v; round trip gave %+v, %v", s, r, back, err)
		}
	})
}

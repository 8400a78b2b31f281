package timeline

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// attackValues seed the fuzz targets: int64's extremes, negatives, zero, empty, huge, Unicode
// and the RFC 3339 extremes, the values issue 49 and its neighbours are made of.
var attackValues = []string{
	"", "0", "1", "-1", "+1", "00", "9223372036854775807", "-9223372036854775808", "9223372036854774000",
	"99999999999999999999", "253402300799", "253402300800", "21600", "21601", "1764950000",
	"9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z",
	"9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+23:59", "2025-11-24T16:00:00.999999999Z",
	"1ns", "1.5s", "1s", "1m", "6h", "6h0m1s", "2562047h47m16.854775807s", "-9223372036854775808ns",
	"json", "csv", "JSON", "٣", "１", "\x00", "\xff", "1e3", "0x10",
}

// FuzzQuery: whatever ?from=&to=&step=&format= a request sends, ParseQuery does not panic, and a
// query it accepts lies within every documented range, so that the read it leads to stays
// within MaxMinutes minutes, MaxCommands commands and MaxPoints steps.
func FuzzQuery(f *testing.F) {
	f.Add("to=9223372036854775807", int64(1764950000), false)
	f.Add("to=9223372036854775807&from=9223372036854774000", int64(1764950000), false)
	f.Add("from=-1&step=0", int64(0), true)
	f.Add("to=100&to=200&format=csv", int64(-1), false)
	f.Add("from=253402279199&to=253402300799&step=3", int64(253402300799), false)
	for i, v := range attackValues {
		for _, name := range []string{"from", "to", "step", "format"} {
			f.Add(name+"="+url.QueryEscape(v), int64(i)*1e9, i%2 == 0)
		}
		f.Add("from="+url.QueryEscape(v)+"&to="+url.QueryEscape(attackValues[(i+9)%len(attackValues)])+"&step="+url.QueryEscape(attackValues[(i+21)%len(attackValues)]), int64(1764950000), false)
	}
	const maxInt = int64(^uint64(0) >> 1)
	f.Add("", maxInt, false)
	f.Add("", -maxInt-1, false)
	f.Fuzz(func(t *testing.T, raw string, nowUnix int64, acceptCSV bool) {
		vals, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		now := time.Unix(nowUnix, 0)
		q, err := ParseQuery(vals, now, acceptCSV)
		if err != nil {
			if !errors.Is(err, errQuery) {
				t.Fatalf("%q: error %v does not wrap errQuery", raw, err)
			}
			return
		}
		if err := checkQuery(q); err != nil {
			t.Fatalf("%q (now %d): accepted %+v: %v", raw, nowUnix, q, err)
		}
	})
}

// checkQuery holds an accepted Query to its documented ranges and Read's caps.
func checkQuery(q Query) error {
	switch {
	case q.From < MinTime || q.To > MaxTime || q.From >= q.To:
		return errors.New("range outside [MinTime, MaxTime] or empty")
	case q.To-q.From > int64(MaxSpan/time.Second):
		return errors.New("range longer than MaxSpan")
	case q.Step < MinStep || q.Step > MaxStep:
		return errors.New("step outside [MinStep, MaxStep]")
	case stepsIn(q.To-q.From, q.Step) > MaxPoints:
		return errors.New("more than MaxPoints steps")
	case q.Format != "json" && q.Format != "csv":
		return errors.New("format neither json nor csv")
	}
	minutes, err := bounds(q.From, q.To, q.Step)
	if err != nil {
		return err
	}
	if minutes*2 > MaxCommands(0) || minutes*34 > MaxCommands(32) {
		return errors.New("more commands than MaxCommands")
	}
	return nil
}

// FuzzReadBounds: whatever range and step a caller hands Reader.Read, bounds either refuses it or
// lets through one whose minutes are within MaxMinutes, whose every minute key and offset Read
// computes without overflow, and whose steps cover the range.
func FuzzReadBounds(f *testing.F) {
	const maxInt = int64(^uint64(0) >> 1)
	for _, s := range [][3]int64{
		{0, maxInt, 1}, {maxInt - 1800, maxInt, 1}, {9223372036854774000, maxInt, 1}, {-1, 10, 1},
		{-maxInt - 1, 0, 1}, {10, 10, 1}, {10, 20, 0}, {10, 20, maxInt}, {10, 20, -maxInt - 1},
		{0, 21661, 1}, {30, 21630, 1}, {MaxTime - 21600, MaxTime, 1}, {MaxTime, MaxTime + 1, 1},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, from, to, step int64) {
		minutes, err := bounds(from, to, step)
		if err != nil {
			if !errors.Is(err, errOutOfBounds) {
				t.Fatalf("bounds(%d, %d, %d): error %v does not wrap errOutOfBounds", from, to, step, err)
			}
			return
		}
		if minutes < 1 || minutes > MaxMinutes {
			t.Fatalf("bounds(%d, %d, %d): %d minutes; want 1 to %d", from, to, step, minutes, MaxMinutes)
		}
		first, last := from/60, from/60+minutes-1
		if first*60 > from || (last+1)*60 < to || (last+1)*60 > MaxTime+60 || last*60 >= to {
			t.Fatalf("bounds(%d, %d, %d): minutes %d to %d do not cover the range exactly", from, to, step, first, last)
		}
		if steps := stepsIn(to-from, step); steps < 1 || steps > to-from || (steps-1) > (to-from-1)/step {
			t.Fatalf("bounds(%d, %d, %d): %d steps", from, to, step, steps)
		}
		if n := minutes * int64(2+32); n > MaxCommands(32) {
			t.Fatalf("bounds(%d, %d, %d): %d commands; at most %d", from, to, step, n, MaxCommands(32))
		}
	})
}

// FuzzTimelineRoute: whatever query and Accept header GET /posts/{postID}/timeline gets, the real
// handler over a real Redis answers 200 or a 400 with a JSON error, never panics, and sends Redis
// no command for a 400 and at most MaxCommands for a 200.
func FuzzTimelineRoute(f *testing.F) {
	f.Add("to=9223372036854775807", "")
	f.Add("from=253402279199&to=253402300799&step=3", "text/csv")
	f.Add("from=-1&step=1ns&format=xml", "")
	for _, v := range attackValues {
		f.Add("from="+url.QueryEscape(v), "")
		f.Add("step="+url.QueryEscape(v), "text/csv")
	}
	rdb := redistest.Start(f).Client(f)
	var sent commandCounter
	rdb.AddHook(&sent)
	h := routes(rdb, time.Unix(1764950000, 0))
	f.Fuzz(func(t *testing.T, query, accept string) {
		req, err := http.NewRequest(http.MethodGet, "/posts/talk/timeline?"+query, nil)
		if err != nil || strings.Contains(query, "#") {
			return // not one request target: net/http would not serve it
		}
		sent.reset()
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		n := sent.count()
		switch rec.Code {
		case http.StatusOK:
			if n < 1 || n > MaxCommands(1) {
				t.Fatalf("%q: 200 after %d commands; want 1 to %d", query, n, MaxCommands(1))
			}
		case http.StatusBadRequest:
			var e struct{ Error string }
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" || n != 0 {
				t.Fatalf("%q: 400 %.200s after %d commands; want a JSON error and none", query, rec.Body.String(), n)
			}
		default:
			t.Fatalf("%q: %d %.200s; want 200 or 400", query, rec.Code, rec.Body.String())
		}
	})
}

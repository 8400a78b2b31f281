package update

import (
	"encoding/json"
	"testing"
)

func TestWatchingRoundTrip(t *testing.T) {
	for _, give := range []Watching{
		{PostID: "42", Watching: 12345, TS: 1700000000000000},
		{PostID: "a_b-C", Watching: 0, TS: 1},
	} {
		b := give.AppendJSON(nil)
		got, err := ParseWatching(b)
		if err != nil || got != give {
			t.Errorf("ParseWatching(%s) = %+v, %v; want %+v", b, got, err, give)
		}
		var std Watching
		if err := json.Unmarshal(b, &std); err != nil || std != give {
			t.Errorf("encoding/json reads %s as %+v, %v; want %+v", b, std, err, give)
		}
		post, n, ts, err := SplitWatching(b)
		if err != nil || string(post) != give.PostID || n != give.Watching || ts != give.TS {
			t.Errorf("SplitWatching(%s) = %q, %d, %d, %v", b, post, n, ts, err)
		}
	}
}

func TestWatchingWireForm(t *testing.T) {
	got := string(Watching{PostID: "42", Watching: 12345, TS: 1700000000000000}.AppendJSON(nil))
	want := `{"post_id":"42","watching":12345,"ts":1700000000000000}`
	if got != want {
		t.Errorf("got %s; want %s", got, want)
	}
}

func TestParseWatchingRejects(t *testing.T) {
	for _, bad := range []string{"", "{}", `{"post_id":"42","count":1,"ts":2}x`, `{"watching":3}`} {
		if _, err := ParseWatching([]byte(bad)); err == nil {
			t.Errorf("ParseWatching(%q) succeeded; want error", bad)
		}
	}
	// A count update is not a watching number, and the other way round.
	count := Update{PostID: "42", Count: 1, TS: 2}.AppendJSON(nil)
	if _, _, _, err := SplitWatching(count); err == nil {
		t.Errorf("SplitWatching(%s) succeeded; want error", count)
	}
	w := Watching{PostID: "42", Watching: 1, TS: 2}.AppendJSON(nil)
	if _, _, _, err := SplitCount(w); err == nil {
		t.Errorf("SplitCount(%s) succeeded; want error", w)
	}
}

func TestSplitAllocs(t *testing.T) {
	c := Update{PostID: "42", Count: 9, TS: 10}.AppendJSON(nil)
	w := Watching{PostID: "42", Watching: 9, TS: 10}.AppendJSON(nil)
	if n := testing.AllocsPerRun(100, func() { _, _, _, _ = SplitCount(c); _, _, _, _ = SplitWatching(w) }); n != 0 {
		t.Errorf("SplitCount and SplitWatching allocate %v times; want 0", n)
	}
	if post, count, ts, err := SplitCount(c); err != nil || string(post) != "42" || count != 9 || ts != 10 {
		t.Errorf("SplitCount(%s) = %q, %d, %d, %v", c, post, count, ts, err)
	}
}

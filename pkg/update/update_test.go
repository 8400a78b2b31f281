package update

import (
	"encoding/json"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	tests := []Update{
		{PostID: "42", Count: 123, TS: 1700000000000000},
		{PostID: "a_b-C", Count: 0, TS: 1},
		{PostID: "x", Count: -1, TS: 5},
	}
	for _, give := range tests {
		b := give.AppendJSON(nil)
		got, err := Parse(b)
		if err != nil || got != give {
			t.Errorf("Parse(%s) = %+v, %v; want %+v", b, got, err, give)
		}
		var std Update
		if err := json.Unmarshal(b, &std); err != nil || std != give {
			t.Errorf("encoding/json reads %s as %+v, %v; want %+v", b, std, err, give)
		}
		c, ts, err := ParseCount(b)
		if err != nil || c != give.Count || ts != give.TS {
			t.Errorf("ParseCount(%s) = %d, %d, %v", b, c, ts, err)
		}
	}
}

func TestParseOtherForms(t *testing.T) {
	got, err := Parse([]byte(`{"ts": 7, "count": 3, "post_id": "p"}`))
	if err != nil || got != (Update{PostID: "p", Count: 3, TS: 7}) {
		t.Errorf("got %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", "not json", `{"post_id":"p","count":1,"ts":2}x`, `{"count":1}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded; want error", bad)
		}
	}
}

func TestParseCountAllocs(t *testing.T) {
	b := Update{PostID: "42", Count: 9, TS: 10}.AppendJSON(nil)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = ParseCount(b) }); n != 0 {
		t.Errorf("ParseCount allocates %v times; want 0", n)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"post_id":"42","count":1,"ts":2}`))
	f.Add([]byte(`{"post_id":"4\"2","count":1,"ts":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := Parse(b)
		if err != nil {
			return
		}
		if u.PostID == "" {
			t.Fatalf("accepted update without post id: %q", b)
		}
	})
}

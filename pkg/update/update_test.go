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

func TestReactionsForms(t *testing.T) {
	u := Update{PostID: "42", Count: 5, TS: 1700000000000000, Reactions: `{"clap":12,"heart":3}`}
	wire := string(u.AppendJSON(nil))
	if want := `{"post_id":"42","count":5,"ts":1700000000000000,"reactions":{"clap":12,"heart":3}}`; wire != want {
		t.Fatalf("AppendJSON = %s; want %s", wire, want)
	}
	if got, err := Parse([]byte(wire)); err != nil || got != u {
		t.Errorf("Parse(%s) = %+v, %v; want %+v", wire, got, err, u)
	}
	if got, want := string(u.AppendCount(nil)), `{"post_id":"42","count":5,"ts":1700000000000000}`; got != want {
		t.Errorf("AppendCount = %s; want %s", got, want)
	}
	if got, want := string(u.AppendReactions(nil)), `{"post_id":"42","counts":{"clap":12,"heart":3},"ts":1700000000000000}`; got != want {
		t.Errorf("AppendReactions = %s; want %s", got, want)
	}
	none := Update{PostID: "7", Count: 1, TS: 2}
	if got, want := string(none.AppendReactions(nil)), `{"post_id":"7","counts":{},"ts":2}`; got != want {
		t.Errorf("AppendReactions without reactions = %s; want %s", got, want)
	}
	for in, want := range map[string]Update{
		`{"post_id":"p","count":1,"ts":2,"reactions":{}}`:                          {PostID: "p", Count: 1, TS: 2},
		`{"post_id":"p","count":1,"ts":2,"reactions":{ "a": 1,` + "\n" + `"b":2}}`: {PostID: "p", Count: 1, TS: 2, Reactions: `{"a":1,"b":2}`},
		`{"ts":2,"reactions":{"a":1},"count":1,"post_id":"p"}`:                     {PostID: "p", Count: 1, TS: 2, Reactions: `{"a":1}`},
	} {
		if got, err := Parse([]byte(in)); err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{
		`{"post_id":"p","count":1,"ts":2,"reactions":[1]}`,
		`{"post_id":"p","count":1,"ts":2,"reactions":"x"}`,
		`{"post_id":"p","count":1,"ts":2,"reactions":{"a":1}`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded; want error", bad)
		}
	}
}

func TestSplitReactions(t *testing.T) {
	u := Update{PostID: "42", TS: 1700000000000000, Reactions: `{"clap":12,"heart":3}`}
	post, total, ts, err := SplitReactions(u.AppendReactions(nil))
	if err != nil || string(post) != "42" || total != 15 || ts != u.TS {
		t.Fatalf("SplitReactions = %q, %d, %d, %v; want 42, 15, %d", post, total, ts, err, u.TS)
	}
	if _, total, _, err := SplitReactions(Update{PostID: "7", TS: 2}.AppendReactions(nil)); err != nil || total != 0 {
		t.Errorf("no reactions: total %d, %v; want 0", total, err)
	}
	for _, bad := range []string{
		`{"post_id":"p","counts":{"a":1},"ts":2`,
		`{"post_id":"p","counts":{"a":-1},"ts":2}`,
		`{"post_id":"p","counts":{"a" 1},"ts":2}`,
		`{"post_id":"p","counts":{a:1},"ts":2}`,
		`{"post_id":"p","count":1,"ts":2}`,
		`{"post_id":"","counts":{},"ts":2}`,
	} {
		if _, _, _, err := SplitReactions([]byte(bad)); err == nil {
			t.Errorf("SplitReactions(%q) succeeded; want error", bad)
		}
	}
	data := u.AppendReactions(nil)
	if n := testing.AllocsPerRun(100, func() { _, _, _, _ = SplitReactions(data) }); n != 0 {
		t.Errorf("SplitReactions allocates %.0f times; want 0", n)
	}
}

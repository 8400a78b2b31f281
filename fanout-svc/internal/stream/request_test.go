package stream

import (
	"github.com/likes/likes/pkg/update"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestParsePosts(t *testing.T) {
	tests := []struct {
		give    string
		max     int
		want    []string
		wantErr bool
	}{
		{"a,b,c", 64, []string{"a", "b", "c"}, false},
		{"a,a,b", 64, []string{"a", "b"}, false},
		{"", 64, nil, true},
		{"a,,b", 64, nil, true},
		{"a,b c", 64, nil, true},
		{"a,b,c", 2, nil, true},
		{strings.Repeat("x,", 64) + "x", 64, nil, true},
	}
	for _, tt := range tests {
		got, err := parsePosts(tt.give, tt.max)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parsePosts(%q, %d) = %v, %v; want %v, err=%v", tt.give, tt.max, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestLastEventID(t *testing.T) {
	tests := []struct {
		header, query string
		want          int64
		wantOK        bool
	}{
		{"123", "", 123, true},
		{"", "45", 45, true},
		{"7", "45", 7, true},
		{"", "", 0, false},
		{"-1", "", 0, false},
		{"12a", "", 0, false},
		{"99999999999999999999", "", 0, false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/sse/1?lastEventId="+tt.query, nil)
		if tt.header != "" {
			r.Header.Set("Last-Event-ID", tt.header)
		}
		got, ok := lastEventID(r.Header.Get("Last-Event-ID"), r.URL.RawQuery)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("lastEventID(header %q, query %q) = %d, %v; want %d, %v", tt.header, tt.query, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestSingleResumeForms: a single-post stream's id is the post version; a resume with one sends
// only what is newer. An id of the old form, a like count (below minVersionID), cannot say
// whether the reactions moved, so it resumes nothing: the viewer gets the full snapshot.
func TestSingleResumeForms(t *testing.T) {
	const ver = 1_800_000_000_000_000
	req, err := singleRequest("p", "", "1800000000000000")
	if err != nil || !req.resuming {
		t.Fatalf("a version id: %+v, %v; want a resume", req, err)
	}
	if req.resume()(0, update.Update{PostID: "p", Count: 9, TS: ver}) || !req.resume()(0, update.Update{PostID: "p", Count: 9, TS: ver + 1}) {
		t.Error("a version id: want the state sent only when its version is newer")
	}
	for _, old := range []string{"0", "42", "999999999999999"} {
		if req, err := singleRequest("p", "lastEventId="+old, ""); err != nil || req.resuming {
			t.Errorf("old-form id %s: resume %v, %v; want none (a full snapshot)", old, req.resuming, err)
		}
	}
}

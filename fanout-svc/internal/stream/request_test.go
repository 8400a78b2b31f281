package stream

import (
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

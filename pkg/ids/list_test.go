package ids

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePostList(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		max     int
		want    []string
		wantErr error
	}{
		{"three", "a,b,c", 64, []string{"a", "b", "c"}, nil},
		{"repeats dropped, order kept", "b,a,b,a", 64, []string{"b", "a"}, nil},
		{"one", "42", 1, []string{"42"}, nil},
		{"at the cap", strings.Repeat("x,", 99) + "x", 100, []string{"x"}, nil},
		{"empty", "", 64, nil, ErrNoPosts},
		{"empty entry", "a,,b", 64, nil, ErrPostID},
		{"trailing comma", "a,", 64, nil, ErrPostID},
		{"bad id", "a,b c", 64, nil, ErrPostID},
		{"over the cap", "a,b,c", 2, nil, ErrTooManyPosts},
		{"over the cap counts repeats", strings.Repeat("x,", 100) + "x", 100, nil, ErrTooManyPosts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePostList(tt.give, tt.max)
			if !errors.Is(err, tt.wantErr) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePostList(%q, %d) = %v, %v; want %v, %v", tt.give, tt.max, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// FuzzParsePostList: an accepted list holds only valid, distinct ids, no more than max, each of
// which was in the input; a refusal is always one of the documented errors.
func FuzzParsePostList(f *testing.F) {
	for _, s := range []string{"a,b,c", "", "a,,b", "x,x,x", "a b", strings.Repeat("p,", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		const max = 64
		got, err := ParsePostList(list, max)
		if err != nil {
			if !errors.Is(err, ErrNoPosts) && !errors.Is(err, ErrTooManyPosts) && !errors.Is(err, ErrPostID) {
				t.Fatalf("ParsePostList(%q): undocumented error %v", list, err)
			}
			return
		}
		seen := map[string]bool{}
		in := map[string]bool{}
		for _, p := range strings.Split(list, ",") {
			in[p] = true
		}
		if len(got) == 0 || len(got) > max {
			t.Fatalf("ParsePostList(%q) = %d ids", list, len(got))
		}
		for _, p := range got {
			if ValidPostID(p) != nil || seen[p] || !in[p] {
				t.Fatalf("ParsePostList(%q) accepted %q", list, p)
			}
			seen[p] = true
		}
	})
}

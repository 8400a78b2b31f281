package ids

import (
	"strings"
	"testing"
)

func TestValidPostID(t *testing.T) {
	tests := []struct {
		give string
		ok   bool
	}{
		{"42", true},
		{"a_B-9", true},
		{strings.Repeat("x", 64), true},
		{"", false},
		{strings.Repeat("x", 65), false},
		{"a b", false},
		{"a{b}", false},
		{"é", false},
		{"a:b", false},
	}
	for _, tt := range tests {
		err := ValidPostID(tt.give)
		if (err == nil) != tt.ok {
			t.Errorf("ValidPostID(%q) = %v; want ok=%v", tt.give, err, tt.ok)
		}
	}
}

func TestValidUserID(t *testing.T) {
	tests := []struct {
		give string
		ok   bool
	}{
		{"alice", true},
		{"user@example.com", true},
		{strings.Repeat("u", 128), true},
		{"", false},
		{strings.Repeat("u", 129), false},
		{"a b", false},
		{"a:b", false},
		{"tab\t", false},
		{"ü", false},
	}
	for _, tt := range tests {
		err := ValidUserID(tt.give)
		if (err == nil) != tt.ok {
			t.Errorf("ValidUserID(%q) = %v; want ok=%v", tt.give, err, tt.ok)
		}
	}
}

func FuzzValidPostID(f *testing.F) {
	for _, s := range []string{"42", "", "a{b", strings.Repeat("x", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidPostID(s) != nil {
			return
		}
		if len(s) == 0 || len(s) > MaxPostIDLen || strings.ContainsAny(s, "{}: \"\\\n") {
			t.Fatalf("accepted unsafe post id %q", s)
		}
	})
}

func FuzzValidUserID(f *testing.F) {
	for _, s := range []string{"alice", "", "a:b", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidUserID(s) != nil {
			return
		}
		if len(s) == 0 || len(s) > MaxUserIDLen || strings.ContainsAny(s, ": \n\r\t") {
			t.Fatalf("accepted unsafe user id %q", s)
		}
	})
}

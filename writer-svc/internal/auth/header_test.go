package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/sessiontoken"
)

func TestUserFromHeader(t *testing.T) {
	tests := []struct {
		name    string
		give    []string
		want    string
		wantErr error
	}{
		{"one valid", []string{"alice"}, "alice", nil},
		{"printable", []string{"a-b_c.d@e{f}"}, "a-b_c.d@e{f}", nil},
		{"max length", []string{strings.Repeat("u", ids.MaxUserIDLen)}, strings.Repeat("u", ids.MaxUserIDLen), nil},
		{"absent", nil, "", ErrNoUser},
		{"empty", []string{""}, "", ErrNoUser},
		{"two headers", []string{"alice", "bob"}, "", ErrManyUsers},
		{"space", []string{"al ice"}, "", ids.ErrUserID},
		{"colon", []string{"a:b"}, "", ids.ErrUserID},
		{"too long", []string{strings.Repeat("u", ids.MaxUserIDLen+1)}, "", ids.ErrUserID},
		{"non-ascii", []string{"zoë"}, "", ids.ErrUserID},
		{"control", []string{"a\x00b"}, "", ids.ErrUserID},
		{"benchmark user", []string{"bench-u1"}, "", ErrReservedUser},
		{"near the benchmark namespace", []string{"benchmark-u1"}, "benchmark-u1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UserFromHeader(tt.give)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("UserFromHeader(%q) = %q, %v; want %q, %v", tt.give, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// FuzzUserFromHeader: whatever arrives, an accepted user id is a valid one outside the benchmark
// namespace and equals the header.
func FuzzUserFromHeader(f *testing.F) {
	for _, s := range []string{"alice", "", "a:b", "a b", "zoë", strings.Repeat("x", 129)} {
		f.Add(s, false)
	}
	f.Add("alice", true)
	f.Add("bench-u1", false)
	f.Fuzz(func(t *testing.T, v string, twice bool) {
		values := []string{v}
		if twice {
			values = append(values, v)
		}
		got, err := UserFromHeader(values)
		if err != nil {
			return
		}
		if twice || got != v || ids.ValidUserID(got) != nil || sessiontoken.IsBenchUser(got) {
			t.Fatalf("UserFromHeader(%q) accepted %q", values, got)
		}
	})
}

package auth

import (
	"errors"
	"strings"
	"testing"
)

func TestParseBearer(t *testing.T) {
	tests := []struct {
		give    string
		want    string
		wantErr bool
	}{
		{give: "Bearer abc.def.ghi", want: "abc.def.ghi"},
		{give: "bearer abc", want: "abc"},
		{give: "BEARER  abc", want: "abc"},
		{give: "Bearer a-b_c~d+e/f==", want: "a-b_c~d+e/f=="},
		{give: "", wantErr: true},
		{give: "Bearer", wantErr: true},
		{give: "Bearer ", wantErr: true},
		{give: "Basic dXNlcjpwYXNz", wantErr: true},
		{give: "Bearerabc", wantErr: true},
		{give: "Bearer abc def", wantErr: true},
		{give: "Bearer abc\x00", wantErr: true},
		{give: "Bearer " + strings.Repeat("a", MaxTokenLen+1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := ParseBearer(tt.give)
			if tt.wantErr {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Errorf("ParseBearer(%q) = %q, %v; want ErrUnauthenticated", tt.give, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseBearer(%q) = %q, %v; want %q", tt.give, got, err, tt.want)
			}
		})
	}
}

// FuzzParseBearer: an accepted token is non-empty, bounded, has no whitespace and came from the
// header; a refusal is always ErrUnauthenticated (a 401, never a 500).
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc.def.ghi", "bearer x", "Basic x", "Bearer  ", "Bearer a b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, err := ParseBearer(header)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("ParseBearer(%q): error %v is not ErrUnauthenticated", header, err)
			}
			return
		}
		if tok == "" || len(tok) > MaxTokenLen || strings.ContainsAny(tok, " \t\r\n") || !strings.HasSuffix(header, tok) {
			t.Fatalf("ParseBearer(%q) accepted %q", header, tok)
		}
	})
}

package web

import (
	"strconv"
	"strings"
	"testing"

	"github.com/likes/likes/pkg/ids"
)

func TestConfigValidate(t *testing.T) {
	many := make([]string, MaxPosts+1)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	tests := []struct {
		name    string
		give    Config
		wantErr string // "" for valid
	}{
		{"writer on another origin", Config{WriterURL: "http://127.0.0.1:8080", Posts: []string{"1", "a_b-C"}}, ""},
		{"writer behind the same proxy", Config{Posts: []string{"1"}}, ""},
		{"https writer with path", Config{WriterURL: "https://likes.example.com/api/", Posts: []string{"1"}, Token: "abc.def.ghi"}, ""},
		{"posts at the limit", Config{Posts: many[:MaxPosts]}, ""},
		{"no posts", Config{}, "at least one post"},
		{"too many posts", Config{Posts: many}, "at most 64"},
		{"duplicate post", Config{Posts: []string{"1", "1"}}, "listed twice"},
		{"invalid post id", Config{Posts: []string{"a b"}}, "post id"},
		{"relative writer", Config{WriterURL: "/writer", Posts: []string{"1"}}, "scheme"},
		{"javascript writer", Config{WriterURL: "javascript:alert(1)", Posts: []string{"1"}}, "scheme"},
		{"writer without host", Config{WriterURL: "http://", Posts: []string{"1"}}, "host"},
		{"writer with query", Config{WriterURL: "http://w/?x=1", Posts: []string{"1"}}, "query"},
		{"writer with user", Config{WriterURL: "http://u:p@w", Posts: []string{"1"}}, "user info"},
		{"token with space", Config{Posts: []string{"1"}, Token: "a b"}, "token"},
		{"reaction kinds", Config{Posts: []string{"1"}, Reactions: []string{"clap", "heart", "thumbs_up-2"}}, ""},
		{"bad reaction kind", Config{Posts: []string{"1"}, Reactions: []string{"clap", "🔥"}}, "reactions"},
		{"reaction kind twice", Config{Posts: []string{"1"}, Reactions: []string{"clap", "clap"}}, "listed twice"},
		{"too many reaction kinds", Config{Posts: []string{"1"}, Reactions: many[:ids.MaxReactionKinds+1]}, "at most 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.give.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v; want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v; want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

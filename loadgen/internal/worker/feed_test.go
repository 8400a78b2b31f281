package worker

import "testing"

func TestStreamPath(t *testing.T) {
	posts := []string{"a", "b", "c", "d"}
	tests := []struct {
		name        string
		first, feed int
		want        string
	}{
		{"single post", 2, 0, "/sse/c"},
		{"feed of one is a single post", 2, 1, "/sse/c"},
		{"feed", 0, 3, "/sse?posts=a,b,c"},
		{"feed wraps around", 2, 3, "/sse?posts=c,d,a"},
		{"every post", 3, 4, "/sse?posts=d,a,b,c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := streamPath(posts, tt.first, tt.feed); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}

func TestInitRejectsFeedLongerThanPosts(t *testing.T) {
	c := startWorker(t)
	if _, err := c.Call(Request{Op: OpInit, Init: &Init{Nodes: []string{"http://127.0.0.1:1"}, Posts: []string{"a", "b"}, Feed: 3}}); err == nil {
		t.Error("init with a feed of 3 over 2 posts succeeded; want an error")
	}
}

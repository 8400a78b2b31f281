package posts

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
)

// TestExistingViewersLeavesOutPostsWithoutAVersion: the watching counter is handed only the posts
// that exist (a version above 0: a like or a reaction), so that viewers of made-up posts write no
// "watching now" key; LocalViewers still lists every post with viewers.
func TestExistingViewersLeavesOutPostsWithoutAVersion(t *testing.T) {
	r := startRegistry(t, Config{UnsubscribeGrace: time.Minute}, newSlowSubscriber(0))
	held, err := r.Acquire(context.Background(), []string{"liked", "made-up", "unread"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(held)
	held[0].Offer(NewFrame(update.Update{PostID: "liked", Count: 1, TS: 100}))
	held[1].Offer(NewFrame(update.Update{PostID: "made-up"})) // a snapshot of a post never liked

	tests := []struct {
		name string
		give func(fn func(string, int))
		want map[string]int
	}{
		{"ExistingViewers", r.ExistingViewers, map[string]int{"liked": 1}},
		{"LocalViewers", r.LocalViewers, map[string]int{"liked": 1, "made-up": 1, "unread": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]int{}
			tt.give(func(post string, n int) { got[post] = n })
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v; want %v", got, tt.want)
			}
		})
	}
	held[1].Offer(NewFrame(update.Update{PostID: "made-up", Count: 1, TS: 200})) // its first like
	got := map[string]int{}
	r.ExistingViewers(func(post string, n int) { got[post] = n })
	if want := map[string]int{"liked": 1, "made-up": 1}; !maps.Equal(got, want) {
		t.Errorf("after the first like: got %v; want %v", got, want)
	}
}

package routes

import "testing"

func TestPublic(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"/", true},
		{"/like/{postID}", true},
		{"/likes", true},
		{"/sse/{postID}", true},
		{"/assets/*", true},
		{"/client/likes.js", true},
		{"/metrics", false},
		{"/healthz", false},
		{"/readyz", false},
		{"/admin", false},
		{"/admin/", false},
		{"/admin/drain/{node}", false},
		{"/metrics/extra", false},
		{"/administrators", true},
		{"/metricsz", true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			if got := Public(tt.give); got != tt.want {
				t.Errorf("Public(%q) = %v; want %v", tt.give, got, tt.want)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		path, prefix string
		want         bool
	}{
		{"/like", "/like", true},
		{"/like/42", "/like", true},
		{"/like/42", "/like/", true},
		{"/like", "/like/", true},
		{"/likes", "/like", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"/aaa/bbb", "/aaa/bbb/", true},
		{"/aaa/bbbxyz", "/aaa/bbb", false},
		{"/count", "/counts", false},
	}
	for _, tt := range tests {
		if got := Within(tt.path, tt.prefix); got != tt.want {
			t.Errorf("Within(%q, %q) = %v; want %v", tt.path, tt.prefix, got, tt.want)
		}
	}
}

// TestInternalIsACopy: a caller cannot widen what is public by editing the returned slice.
func TestInternalIsACopy(t *testing.T) {
	got := Internal()
	if len(got) == 0 {
		t.Fatal("Internal() is empty; want the internal prefixes")
	}
	got[0] = "/nothing"
	if Internal()[0] == "/nothing" {
		t.Errorf("Internal() shares its backing array with the package")
	}
}

package worker

import (
	"slices"
	"testing"
	"unsafe"
)

func TestStreamPathsAndRequest(t *testing.T) {
	posts := []string{"a", "b", "c"}
	if got, want := streamPaths(posts, 1), []string{"/sse/a", "/sse/b", "/sse/c"}; !slices.Equal(got, want) {
		t.Errorf("single-post paths %q; want %q", got, want)
	}
	if got, want := streamPaths(posts, 2), []string{"/sse?posts=a,b", "/sse?posts=b,c", "/sse?posts=c,a"}; !slices.Equal(got, want) {
		t.Errorf("feed paths %q; want %q", got, want)
	}
	tg := target{base: "/edge", host: "node:8090"}
	req := tg.appendRequest([]byte("stale"), "/sse/b")[len("stale"):]
	want := "GET /edge/sse/b HTTP/1.1\r\nHost: node:8090\r\nAccept: text/event-stream\r\n" +
		"Cache-Control: no-cache\r\nUser-Agent: likes-loadgen\r\n\r\n"
	if string(req) != want {
		t.Errorf("request %q; want %q", req, want)
	}
}

// TestViewerFitsItsSizeClass: a worker holds up to 20,000 viewers and a million-viewer run tens of
// workers; a field that pushes the struct into Go's next size class (352 bytes) costs 32 bytes a
// viewer. Reorder or drop something before raising this.
func TestViewerFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(viewer{}); size > 320 {
		t.Fatalf("a viewer takes %d bytes; want at most 320", size)
	}
}

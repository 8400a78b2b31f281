package fastaccept

import (
	"slices"
	"testing"
)

func TestParseTakesPlainHeads(t *testing.T) {
	raw := "GET /sse/1?lastEventId=4 HTTP/1.1\r\nHost: node:8090\r\nlast-event-id:  7 \r\nX-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2\r\n\r\n"
	if end := headEnd([]byte(raw)); end != len(raw) {
		t.Fatalf("headEnd = %d; want %d", end, len(raw))
	}
	var h Head
	if !parse([]byte(raw), &h) {
		t.Fatal("plain head refused")
	}
	if h.Method != "GET" || string(h.Path()) != "/sse/1" || h.RawQuery() != "lastEventId=4" || !h.Proto11 {
		t.Errorf("got %q %q %q 1.1=%v", h.Method, h.Path(), h.RawQuery(), h.Proto11)
	}
	if got := h.Get("Last-Event-ID"); got != "7" {
		t.Errorf("Last-Event-ID %q; want 7 (case-insensitive, trimmed)", got)
	}
	if got := h.Values("X-Forwarded-For"); !slices.Equal(got, []string{"1.1.1.1", "2.2.2.2"}) {
		t.Errorf("X-Forwarded-For %q; want both lines", got)
	}
	if h.Get("Missing") != "" || h.Values("Missing") != nil {
		t.Error("a missing header has a value")
	}
	if !parse([]byte("GET /sse HTTP/1.0\r\n\r\n"), &h) || h.Proto11 {
		t.Error("HTTP/1.0 head without Host refused")
	}
}

// TestParseLeavesOddHeadsToNetHTTP: whatever net/http might read differently, refuse, or follow
// with a body or another protocol is not the fast path's.
func TestParseLeavesOddHeadsToNetHTTP(t *testing.T) {
	for _, raw := range []string{
		"GET /sse/1 HTTP/1.1\nHost: a\n\n",                                     // bare LF
		"GET /sse/1 HTTP/1.0\r\n\n",                                            // bare-LF blank line, no headers
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\n\n",                                 // bare-LF blank line
		"GET /sse/%31 HTTP/1.1\r\nHost: a\r\n\r\n",                             // an escape in the path
		"GET /sse/1 HTTP/1.1\r\n\r\n",                                          // no Host on 1.1
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",                    // two Hosts
		"GET /sse/1 HTTP/1.1\r\nHost: a b\r\n\r\n",                             // bad Host
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n",          // a body
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", // a body
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n",         // another protocol
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",       // interim response
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n folded\r\n\r\n",          // obs-fold
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nBad Name: 1\r\n\r\n",                // bad header name
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nX-A: \x01\r\n\r\n",                  // control byte in a value
		"GET http://a/sse/1 HTTP/1.1\r\nHost: a\r\n\r\n",                       // absolute form
		"GET /sse/1 HTTP/2.0\r\nHost: a\r\n\r\n",                               // not HTTP/1.x
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",                                     // HTTP/2 preface
		"GET /sse/1#x HTTP/1.1\r\nHost: a\r\n\r\n",                             // fragment
		"GET  /sse/1 HTTP/1.1\r\nHost: a\r\n\r\n",                              // empty target
	} {
		b := []byte(raw)
		end := headEnd(b)
		var h Head
		if end > 0 && parse(b[:end], &h) {
			t.Errorf("parse(%q) took it; want it left to net/http", raw)
		}
	}
}

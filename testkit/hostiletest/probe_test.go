package hostiletest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestProbeJudgesReplies: what a route attack accepts and what it reports, on a server whose
// paths each answer one way.
func TestProbeJudgesReplies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json400":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"bad post id"}`))
		case "/text400":
			http.Error(w, "bad post id", http.StatusBadRequest)
		case "/json500":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"boom"}`))
		case "/json503":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"redis down"}`))
		case "/empty404":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	tg := Target{Addr: strings.TrimPrefix(srv.URL, "http://"), HeadTimeout: time.Second}
	for _, c := range []struct {
		target string
		refuse bool
		bad    bool
	}{
		{"/json400", true, false},
		{"/json503", true, false},
		{"/empty404", true, false},
		{"/ok", false, false},
		{"/text400", false, true},
		{"/json500", false, true},
		{"/ok", true, true},
		{"/ok\x00", true, false}, // net/http's own plain-text 400
	} {
		p := probe{route: Route{Method: "GET", Pattern: c.target}, method: "GET", refuse: c.refuse,
			raw: "GET " + c.target + " HTTP/1.1\r\nHost: t\r\n\r\n"}
		if err := p.check(tg); (err != nil) != c.bad {
			t.Errorf("%q (refuse %v): check = %v; want an error: %v", c.target, c.refuse, err, c.bad)
		}
	}
}

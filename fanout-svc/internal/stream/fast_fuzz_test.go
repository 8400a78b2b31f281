package stream

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/likes/likes/fanout-svc/internal/fastaccept"
)

// routerReading is what the routed handlers read from a request net/http parsed.
type routerReading struct {
	route string
	req   streamRequest
	err   error
}

// readByRouter routes r as the node's router does (the stream routes on chi) and returns what
// the matched handler would read; route "" when no stream route matched.
func readByRouter(r *http.Request, maxPosts int) routerReading {
	var got routerReading
	mux := chi.NewRouter()
	mux.Get(RouteMulti, func(_ http.ResponseWriter, r *http.Request) {
		got.route = RouteMulti
		got.req, got.err = routedMulti(r, maxPosts)
	})
	mux.Get(RouteSingle, func(_ http.ResponseWriter, r *http.Request) {
		got.route = RouteSingle
		got.req, got.err = routedSingle(r)
	})
	mux.ServeHTTP(httptest.NewRecorder(), r)
	return got
}

// FuzzFastRequestMatchesRouter is the differential test of the fast path: for every head the
// fast accept loop would serve as a stream itself, net/http's parser and the router read the same
// route, posts, form and resume point from the same bytes. A head the fast path declines goes to
// net/http, which reads it as it always has, so only what the fast path takes must agree.
func FuzzFastRequestMatchesRouter(f *testing.F) {
	for _, s := range []string{
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse/p-1_x HTTP/1.0\r\n\r\n",
		"GET /sse/1?lastEventId=1800000000000000 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse/1 HTTP/1.1\r\nHost: a\r\nLast-Event-ID: 1800000000000001\r\n\r\n",
		"GET /sse?posts=a,b,c HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse?posts=a,b&lastEventId=7&posts=c HTTP/1.1\r\nHost: a\r\nlast-event-id: 9\r\n\r\n",
		"GET /sse?posts=a%2Cb;x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse?posts=a,a,,b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse//1 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse/1/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse/a/b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse/. HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse/.. HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /sse?posts= HTTP/1.1\r\nHost: a\r\n\r\n",
		"HEAD /sse/1 HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		hd, ok := fastaccept.ReadHead(b)
		if !ok {
			return
		}
		const maxPosts = 4
		route, req, served := fastRequest(&hd, maxPosts)
		if !served {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("%q: served by the fast path; net/http refuses it: %v", b, err)
		}
		got := readByRouter(r, maxPosts)
		if got.route != route || got.err != nil {
			t.Fatalf("%q: the fast path serves it as %s; the router reads %q (%v)", b, route, got.route, got.err)
		}
		if !slices.Equal(got.req.posts, req.posts) || got.req.multi != req.multi ||
			got.req.resuming != req.resuming || got.req.after != req.after {
			t.Fatalf("%q: the fast path reads %+v; the router %+v", b, req, got.req)
		}
	})
}

package fastaccept

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"slices"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// headSeeds are heads the fuzzers start from: plain ones, each kind parse leaves to net/http,
// and the bare-LF blank line after a request line alone that once panicked the loop.
var headSeeds = []string{
	"GET /sse/1 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /sse?posts=a,b&lastEventId=3 HTTP/1.1\r\nHost: node:8090\r\nLast-Event-ID: 7\r\n\r\n",
	"GET /sse/1 HTTP/1.0\r\n\r\n",
	"GET /sse/1 HTTP/1.0\r\n\n",
	"GET /sse/1 HTTP/1.1\r\nHost: a\r\n\n",
	"GET /sse/1 HTTP/1.1\nHost: a\n\n",
	"GET /sse/1 HTTP/1.1\r\nHost: a\rb\r\n\r\n",
	"GET /sse/1 HTTP/1.1\r\nHost: a\r\nX: \x00\r\n\r\n",
	"GET /sse/1 HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2\r\n\r\n",
	"GET /sse/%31 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /sse/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	"GET /sse/1 HTTP/1.1\r\n Host: a\r\n\r\n",
	"GET /sse/1 HTTP/1.1\r\nHost: a\r\n\r\nGET /sse/2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"\r\n\r\n",
	"\n\n",
	"GET\r\n\r\n",
	"GET / HTTP/1.1\r\n:\r\n\r\n",
}

// FuzzReadHead feeds arbitrary bytes to the loop's head reader: it never panics, and a head it
// takes is one net/http reads the same way (method, target, path, query, protocol, headers) and
// would serve: no body, a valid Host, exactly one on HTTP/1.1. Anything it cannot read exactly
// must be refused, which sends it to net/http.
func FuzzReadHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = headEnd(b) // must not panic on any prefix either
		h, ok := ReadHead(b)
		if !ok {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("%q: the fast path took a head net/http refuses: %v", b, err)
		}
		if r.Method != h.Method || r.RequestURI != string(h.target) {
			t.Fatalf("%q: fast path %q %q; net/http %q %q", b, h.Method, h.target, r.Method, r.RequestURI)
		}
		if r.URL.EscapedPath() != string(h.Path()) && r.URL.RawPath != string(h.Path()) {
			t.Fatalf("%q: path %q; net/http %q (raw %q)", b, h.Path(), r.URL.Path, r.URL.RawPath)
		}
		if r.URL.RawQuery != h.RawQuery() {
			t.Fatalf("%q: query %q; net/http %q", b, h.RawQuery(), r.URL.RawQuery)
		}
		if r.ProtoAtLeast(1, 1) != h.Proto11 || r.ProtoMajor != 1 {
			t.Fatalf("%q: HTTP/1.1 %v; net/http %s", b, h.Proto11, r.Proto)
		}
		if r.ContentLength > 0 || len(r.TransferEncoding) > 0 {
			t.Fatalf("%q: the fast path took a head with a body", b)
		}
		// The server's own checks after parsing (net/http's server.go readRequest), on the header
		// lines as it reads them: ReadRequest has dropped Host from r.Header by now.
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
		_, _ = tp.ReadLine()
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("%q: header lines net/http refuses: %v", b, err)
		}
		hosts := hdr["Host"]
		if h.Proto11 && len(hosts) == 0 || len(hosts) > 1 || len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
			t.Fatalf("%q: Host lines %q, which net/http's server refuses", b, hosts)
		}
		if got := h.Values("Host"); !slices.Equal(got, hosts) {
			t.Fatalf("%q: Host %q; net/http %q", b, got, hosts)
		}
		for name, vals := range hdr {
			if !httpguts.ValidHeaderFieldName(name) {
				t.Fatalf("%q: header name %q, which net/http's server refuses", b, name)
			}
			for _, v := range vals {
				if !httpguts.ValidHeaderFieldValue(v) {
					t.Fatalf("%q: header value %q, which net/http's server refuses", b, v)
				}
			}
			if got := h.Values(name); !slices.Equal(got, vals) {
				t.Fatalf("%q: header %s %q; net/http %q", b, name, got, vals)
			}
			if got := h.Get(name); got != hdr.Get(name) {
				t.Fatalf("%q: Get(%s) %q; net/http %q", b, name, got, hdr.Get(name))
			}
		}
	})
}

package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/net/http/httpguts"
	"pgregory.net/rapid"
)

// call is one drawn request.
type call struct {
	op       *operation
	identity string // none, session, admin or forged
	url      string
	path     map[string]string // path parameters as sent, unescaped
	header   http.Header
	body     []byte
}

// identities are the credentials a draw may present: the sessions the fuzzer holds (POST
// /session), the admin token, and forged or malformed bearers.
type identities struct {
	sessions []string
	admin    string
}

// forgedBearers are Authorization values no writer may accept: an unsigned JWT, a JWT signed
// with another key, a bearer of 8 KB, the wrong scheme, an empty one.
var forgedBearers = []shown{
	"Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhZG1pbiIsImF1ZCI6Imxpa2VzLXNlc3Npb24ifQ.",
	"Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ4IiwiYXVkIjoibGlrZXMtc2Vzc2lvbiIsImV4cCI6OTk5OTk5OTk5OX0.c2lnbmF0dXJl",
	shown("Bearer " + strings.Repeat("A", 8<<10)), "Bearer ", "Bearer", "Basic YWRtaW46YWRtaW4=", "bearer x.y.z", "Bearer a.b",
}

// drawCall draws a request for one of ops against the services at bases (by target).
func drawCall(t *rapid.T, ops []*operation, fx *fixtures, ids *identities, bases map[string]string) *call {
	op := rapid.SampledFrom(ops).Draw(t, "operation")
	c := &call{op: op, path: map[string]string{}, header: http.Header{}}
	c.identity = rapid.SampledFrom([]string{"none", "session", "admin", "forged"}).Draw(t, "identity")
	switch c.identity {
	case "session":
		c.header.Set("Authorization", "Bearer "+rapid.SampledFrom(ids.sessions).Draw(t, "session"))
	case "admin":
		c.header.Set("Authorization", "Bearer "+ids.admin)
	case "forged":
		c.header.Set("Authorization", string(rapid.SampledFrom(forgedBearers).Draw(t, "bearer")))
	}
	if rapid.IntRange(0, 9).Draw(t, "X-User-ID?") == 9 { // ignored in the sessions mode: it must not identify
		c.header.Set("X-User-ID", rapid.SampledFrom(fx.users).Draw(t, "X-User-ID"))
	}
	path := op.path
	var query []string
	focus := -1 // the one hostile parameter, -1: each drawn freely
	if len(op.params) > 0 && rapid.IntRange(0, 3).Draw(t, "one hostile parameter?") > 0 {
		focus = rapid.IntRange(0, len(op.params)-1).Draw(t, "hostile parameter")
	}
	for i, p := range op.params {
		r := free
		if focus >= 0 {
			r = tame
			if i == focus {
				r = hostile
			}
		}
		vals := drawParam(t, p, fx, r)
		switch p.In {
		case openapi3.ParameterInPath:
			c.path[p.Name] = vals[0].s
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(vals[0].s))
		case openapi3.ParameterInQuery:
			for _, v := range vals {
				if v.raw {
					query = append(query, url.QueryEscape(p.Name)+"="+v.s)
				} else {
					query = append(query, url.QueryEscape(p.Name)+"="+url.QueryEscape(v.s))
				}
			}
		case openapi3.ParameterInHeader:
			for _, v := range vals {
				c.header.Add(p.Name, headerSafe(v.s))
			}
		case openapi3.ParameterInCookie:
			for _, v := range vals {
				c.header.Add("Cookie", p.Name+"="+url.QueryEscape(v.s))
			}
		}
	}
	c.url = bases[op.target] + path
	if len(query) > 0 {
		c.url += "?" + strings.Join(query, "&")
	}
	c.body = drawBody(t, op)
	return c
}

// headerSafe keeps a hostile header value that HTTP can carry, and escapes one it cannot (CR,
// LF, NUL): Go's client would refuse to send it, which tests the client, not the server.
func headerSafe(v string) string {
	if httpguts.ValidHeaderFieldValue(v) {
		return v
	}
	return url.QueryEscape(v)
}

// hostileBodies are bodies for an operation that takes one: none, empty JSON, the wrong JSON
// types, a truncated object, 8 KB of a string, and one past the writer's 64 KiB body limit.
var hostileBodies = []shown{"", "{}", "null", "[]", "1", `{"a":`, shown(`"` + strings.Repeat("x", 8<<10) + `"`), shown(strings.Repeat("{", 70<<10))}

func drawBody(t *rapid.T, op *operation) []byte {
	if op.op.RequestBody == nil {
		return nil
	}
	return []byte(rapid.SampledFrom(hostileBodies).Draw(t, "body"))
}

// headSize is about how many bytes the request's head takes on the wire.
func (c *call) headSize() int {
	n := len(c.op.method) + len(c.url) + 16
	for k, vs := range c.header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// reply is what came back.
type reply struct {
	req      *http.Request
	resp     *http.Response // its body closed: for its status and headers
	status   int
	header   http.Header
	body     []byte
	streamed bool // a text/event-stream: the head was read, the body was not
	err      error
	took     time.Duration
}

// maxReply bounds how much of a reply the fuzzer reads: a timeline of 10,000 steps in CSV is
// well under it.
const maxReply = 16 << 20

// send sends c with a deadline of timeout for the whole reply (for a stream: its head).
func (c *call) send(client *http.Client, timeout time.Duration) reply {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.op.method, c.url, body)
	if err != nil {
		return reply{err: fmt.Errorf("build request: %w", err)}
	}
	req.Header = c.header.Clone()
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{req: req, err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	r := reply{req: req, resp: resp, status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.streamed, r.took = true, time.Since(start)
		return r
	}
	r.body, err = io.ReadAll(io.LimitReader(resp.Body, maxReply))
	r.took = time.Since(start)
	if err != nil {
		r.err = fmt.Errorf("read body: %w", err)
	} else if len(r.body) == maxReply {
		r.err = errors.New("reply body over 16 MiB")
	}
	return r
}

// describe is the request and its reply for a failure's log, long values shortened.
func (c *call) describe(r reply) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", c.op.method, shorten(c.url, 600))
	fmt.Fprintf(&b, "  operation %s, identity %s", c.op, c.identity)
	for k, vs := range c.header {
		for _, v := range vs {
			fmt.Fprintf(&b, "\n  %s: %s", k, shorten(v, 120))
		}
	}
	if c.body != nil {
		fmt.Fprintf(&b, "\n  body (%d bytes): %s", len(c.body), shorten(string(c.body), 200))
	}
	if r.err != nil {
		fmt.Fprintf(&b, "\n  -> error after %v: %v", r.took.Round(time.Millisecond), r.err)
		return b.String()
	}
	fmt.Fprintf(&b, "\n  -> %d after %v, Content-Type %q", r.status, r.took.Round(time.Millisecond), r.header.Get("Content-Type"))
	if v := r.header.Get("Retry-After"); v != "" {
		fmt.Fprintf(&b, ", Retry-After %q", v)
	}
	if !r.streamed {
		fmt.Fprintf(&b, "\n  body (%d bytes): %s", len(r.body), shorten(string(r.body), 600))
	}
	return b.String()
}

// shorten cuts s to about n bytes, saying how long it was.
func shorten(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:n], len(s))
}

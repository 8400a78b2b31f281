package fastaccept

import (
	"bytes"

	"golang.org/x/net/http/httpguts"
)

// Head is a request head the loop read and checked: an HTTP/1.0 or 1.1 request without a body,
// whose lines all end in CRLF, whose header names and values net/http would accept, with exactly
// one valid Host on HTTP/1.1. Its accessors read the buffer the loop owns: a Head is valid only
// during the handler's call, and strings that outlive it must be copies (Path and RawQuery are).
type Head struct {
	Method  string
	target  []byte // request target in origin form, as sent
	headers []byte // header lines, each ending in CRLF
	Proto11 bool   // HTTP/1.1 (else HTTP/1.0)
	pathEnd int    // end of the path in target
}

// Path returns the request path as sent, not unescaped.
func (h *Head) Path() []byte { return h.target[:h.pathEnd] }

// RawQuery returns the query after '?', or "" (not unescaped).
func (h *Head) RawQuery() string {
	if h.pathEnd == len(h.target) {
		return ""
	}
	return string(h.target[h.pathEnd+1:])
}

// Get returns the first value of the header named name (ASCII case-insensitive), trimmed of
// spaces and tabs, as net/http's Header.Get would.
func (h *Head) Get(name string) string {
	var v []byte
	h.each(name, func(val []byte) bool { v = val; return false })
	return string(v)
}

// Values returns every value of the header named name, in order.
func (h *Head) Values(name string) []string {
	var out []string
	h.each(name, func(val []byte) bool { out = append(out, string(val)); return true })
	return out
}

// each calls f with each value of name until f returns false.
func (h *Head) each(name string, f func([]byte) bool) {
	rest := h.headers
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i-1] // parse checked every line ends in CRLF
		rest = rest[i+1:]
		colon := bytes.IndexByte(line, ':')
		if colon == len(name) && asciiEqualFold(line[:colon], name) && !f(trimOWS(line[colon+1:])) {
			return
		}
	}
}

// headEnd returns the length of the head in b (through its blank line), or -1 if b holds no
// blank line yet. A bare-LF blank line counts too, so that such a head is found (and refused by
// parse) rather than waited on.
func headEnd(b []byte) int {
	if i := bytes.Index(b, []byte("\n\r\n")); i >= 0 {
		if j := bytes.Index(b[:i+1], []byte("\n\n")); j >= 0 {
			return j + 2
		}
		return i + 3
	}
	if j := bytes.Index(b, []byte("\n\n")); j >= 0 {
		return j + 2
	}
	return -1
}

// ReadHead reads b as one whole request head, as the loop does: it reports false for bytes that
// are not exactly one head through its blank line, and for anything parse leaves to net/http.
// Tests that compare the fast path with net/http read heads through it.
func ReadHead(b []byte) (Head, bool) {
	var h Head
	if headEnd(b) != len(b) || !parse(b, &h) {
		return Head{}, false
	}
	return h, true
}

// parse checks the head b (through its blank line) and returns it, or false for anything the
// loop leaves to net/http: a head net/http might read differently, refuse, or follow with a body
// or another protocol. It is called on bytes any client sent: no input may make it panic
// (FuzzReadHead).
func parse(b []byte, h *Head) bool {
	if !bytes.HasSuffix(b, []byte("\r\n\r\n")) {
		return false // ends in a bare-LF blank line (headEnd finds those too): net/http's
	}
	i := bytes.Index(b, []byte("\r\n")) // the request line's end; at most len(b)-4
	if i < 0 {
		return false
	}
	line := b[:i]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return false
	}
	sp2 := bytes.IndexByte(line[sp1+1:], ' ')
	if sp2 <= 0 {
		return false
	}
	sp2 += sp1 + 1
	target, proto := line[sp1+1:sp2], line[sp2+1:]
	switch string(proto) {
	case "HTTP/1.1":
		h.Proto11 = true
	case "HTTP/1.0":
		h.Proto11 = false
	default:
		return false
	}
	if target[0] != '/' {
		return false // absolute form, '*' and authority form are net/http's
	}
	h.pathEnd = len(target)
	for j, c := range target {
		if c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
		if h.pathEnd == len(target) {
			switch c {
			case '?':
				h.pathEnd = j
			case '%':
				return false // an escape in the path: net/http unescapes (or refuses) it
			}
		}
	}
	if !httpguts.ValidHeaderFieldName(string(line[:sp1])) {
		return false
	}
	h.Method = methodString(line[:sp1])
	h.target = target
	h.headers = b[i+2 : len(b)-2]
	hosts := 0
	for rest := h.headers; len(rest) > 0; {
		j := bytes.IndexByte(rest, '\n')
		if j < 1 || rest[j-1] != '\r' {
			return false
		}
		hl := rest[:j-1]
		rest = rest[j+1:]
		colon := bytes.IndexByte(hl, ':')
		if colon <= 0 || !httpguts.ValidHeaderFieldName(string(hl[:colon])) {
			return false // also a folded line, which starts with a space
		}
		name, val := hl[:colon], trimOWS(hl[colon+1:])
		if !httpguts.ValidHeaderFieldValue(string(val)) {
			return false
		}
		switch {
		case asciiEqualFold(name, "Host"):
			hosts++
			if !httpguts.ValidHostHeader(string(val)) {
				return false
			}
		case asciiEqualFold(name, "Content-Length"), asciiEqualFold(name, "Transfer-Encoding"),
			asciiEqualFold(name, "Upgrade"), asciiEqualFold(name, "Expect"):
			return false // a body, another protocol or an interim response: net/http's
		}
	}
	if hosts > 1 || (h.Proto11 && hosts == 0) {
		return false
	}
	return true
}

// methodString returns the method as a string, without allocating for GET.
func methodString(m []byte) string {
	if string(m) == "GET" {
		return "GET"
	}
	return string(m)
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

package contract

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"pgregory.net/rapid"
)

// hostileStrings are what a client that wants a server down or confused puts in any parameter:
// integer extremes and their neighbours past int64, signs, other notations, a string where a
// number goes, empty and huge strings, Unicode (bidi, BOM, emoji, digits of other scripts,
// invalid UTF-8), NULs, CR LF and other escapes, RFC 3339 extremes and durations that overflow.
var hostileStrings = []shown{
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "4294967296", "2147483648", "-2147483649", "-1", "0", "-0", "1", "+1",
	"00000000000000000000000000001", "1.5", "1e308", "1e-308", "NaN", "Infinity", "-Infinity",
	"0x7fffffffffffffff", "1_000", " 1", "1 ", "١٢٣", "¹",
	"", " ", "abc", "true", "null", "[]", "{}", "[1,2]", `"1"`,
	shown(strings.Repeat("a", 8<<10)), shown(strings.Repeat("é", 4<<10)), shown(strings.Repeat("9", 8<<10)), shown(strings.Repeat("A", 65)), shown(strings.Repeat("A", 64)),
	"é", "日本語", "👍🏽", "\u202eevil", "\ufeffbom", "\xff\xfe", "\xc3\x28", "a\x00b", "\x00", "\r\n", "a\r\nX-Injected: 1",
	"\t", "\\", "'", `"`, "<script>alert(1)</script>", "' OR 1=1 --", "${jndi:ldap://x}", "{postID}", "*", "?", "#",
	"&", "=", "a&b=c", "a,b", ",", ",,,", "a,,b", "../..", "..", ".", "/", "//", "%", "%25", "%00", "%2F",
	"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59+23:59", "0000-01-01T00:00:00-23:59",
	"1970-01-01T00:00:00Z", "2262-04-11T23:47:16.854775807Z", "1677-09-21T00:12:43.145224192Z", "2026-13-45T25:61:61Z",
	"2026-01-01T00:00:00", "2026-01-01", "1970-01-01T00:00:00.000000000001Z",
	"1ns", "1ms", "0s", "-1s", "1m", "1h", "2562047h47m16.854775807s", "2562048h", "9223372036s", "1.5s", "1e3s",
}

// rawStrings go into the query unescaped: broken escapes, a NUL escape, semicolons (which Go's
// servers refuse to split on), and a parameter smuggled into another's value.
var rawStrings = []shown{"%zz", "%", "%%", "%00", "%u0041", "a;b", ";", "a%26b%3Dc", "%E2%80%AE", "%C0%AF", "a+b", "%FF"}

// hostileValue draws a hostile value for p: one of the hostile strings (three in ten), an
// extreme of the schema's type (two in ten: the int64 edges for an integer, the RFC 3339 extremes
// for a date-time), one past the schema's own bounds (three in ten: its minimum less one, its
// maximum plus one, one character or item too many, a list of 10,000 ids), a raw query fragment
// or a random Unicode string.
func hostileValue(t *rapid.T, p *openapi3.Parameter, s *openapi3.Schema, fx *fixtures, label string) value {
	switch k := rapid.IntRange(0, 9).Draw(t, label+" hostile kind"); {
	case k < 3:
		return value{s: string(rapid.SampledFrom(hostileStrings).Draw(t, label+" hostile"))}
	case k < 5:
		return value{s: string(rapid.SampledFrom(extremes(s)).Draw(t, label+" extreme"))}
	case k < 8:
		return value{s: string(rapid.SampledFrom(pastBounds(s, fx)).Draw(t, label+" past bounds"))}
	case k == 8 && p.In == openapi3.ParameterInQuery:
		return value{s: string(rapid.SampledFrom(rawStrings).Draw(t, label+" raw")), raw: true}
	default:
		return value{s: string(rapid.Map(rapid.String(), func(s string) shown { return shown(s) }).Draw(t, label+" random"))}
	}
}

// extremes are the extremes of s's type: the int64 edges when any branch of it is a number, else
// the RFC 3339 extremes when one is a date-time, else the hostile strings.
func extremes(s *openapi3.Schema) []shown {
	for _, b := range branches(s) {
		if b.Type.Is(openapi3.TypeInteger) || b.Type.Is(openapi3.TypeNumber) {
			return int64Edges
		}
	}
	for _, b := range branches(s) {
		if b.Format == "date-time" {
			return timeEdges
		}
	}
	return hostileStrings
}

// int64Edges are the integer values a server's arithmetic is most likely to mishandle.
var int64Edges = []shown{"9223372036854775807", "-9223372036854775808", "9223372036854775806", "9223372036854775808", "-1", "0"}

// timeEdges are date-times at and past the ends of what a Go time or a unix second can hold.
var timeEdges = []shown{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+23:59",
	"2262-04-11T23:47:16.854775807Z", "1969-12-31T23:59:59Z", "292277026596-12-04T15:30:07Z"}

// pastBounds are values at and just outside what s (or any branch of its oneOf and anyOf)
// allows, and lists far longer than it allows; never empty.
func pastBounds(s *openapi3.Schema, fx *fixtures) []shown {
	out := []shown{"", "-1"}
	for _, b := range branches(s) {
		if b.Type.Is(openapi3.TypeInteger) || b.Type.Is(openapi3.TypeNumber) {
			out = append(out, int64Edges...)
		}
		if b.Format == "date-time" {
			out = append(out, timeEdges...)
		}
		if b.Min != nil {
			out = append(out, shown(strconv.FormatFloat(*b.Min-1, 'f', -1, 64)))
		}
		if b.Max != nil {
			out = append(out, shown(strconv.FormatFloat(*b.Max+1, 'f', -1, 64)), shown(strconv.FormatFloat(*b.Max, 'f', -1, 64)))
		}
		if b.MaxLength != nil && *b.MaxLength < 1<<16 {
			out = append(out, shown(strings.Repeat("a", int(*b.MaxLength)+1)))
		}
		if b.MinLength > 1 && b.MinLength < 1<<16 {
			out = append(out, shown(strings.Repeat("a", int(b.MinLength)-1)))
		}
		if b.Type.Is(openapi3.TypeArray) {
			n := 8
			if b.MaxItems != nil {
				n = int(*b.MaxItems)
			}
			out = append(out, idList(n+1), idList(n), idList(10_000), idList(n)+",", shown(strings.Repeat(fx.posts[0]+",", n+1)), ",")
		}
	}
	return out
}

// branches returns s and the schemas of its oneOf and anyOf.
func branches(s *openapi3.Schema) []*openapi3.Schema {
	out := []*openapi3.Schema{s}
	for _, ref := range append(append([]*openapi3.SchemaRef{}, s.OneOf...), s.AnyOf...) {
		if ref != nil && ref.Value != nil {
			out = append(out, branches(ref.Value)...)
		}
	}
	return out
}

// idList returns n distinct valid post ids, comma-separated.
func idList(n int) shown {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "fz%d", i)
	}
	return shown(b.String())
}

package hostiletest

import (
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// routeAttack is a request-level attack made of one or more requests on every route of the
// router (walkRoutes): a route added to the service is attacked without anyone editing the suite.
type routeAttack struct {
	name string
	// refuse: every request is hostile; each must be refused, and Target.Stored must not change.
	refuse bool
	probes func(routes []Route) []probe
}

// each makes an attack's requests from f's on each route.
func each(f func(r Route) []probe) func(routes []Route) []probe {
	return func(routes []Route) []probe {
		var out []probe
		for _, r := range routes {
			out = append(out, f(r)...)
		}
		return out
	}
}

// queryNames are the query parameters tried on every route: the services' own (a list of posts,
// a page's cursor and size) and a stranger.
var queryNames = []string{"posts", "cursor", "limit", "before", "after", "user", "kind", "x"}

// routeAttacks are the attacks on each of routes, the requests sent with tg.Headers (an identity
// the service accepts, so that a hostile request taken for a valid one would change something).
func routeAttacks(tg Target, routes []Route) []attack {
	ident := ""
	for _, h := range tg.Headers {
		ident += h + "\r\n"
	}
	head := func(method, target, extra string) string {
		return method + " " + target + " HTTP/1.1\r\nHost: t\r\n" + ident + extra + "\r\n"
	}
	mk := func(r Route, refuse bool, method, raw string) probe {
		return probe{route: r, method: method, raw: raw, refuse: refuse}
	}
	same := func(r Route, refuse bool, targets ...string) []probe {
		out := make([]probe, 0, len(targets))
		for _, t := range targets {
			out = append(out, mk(r, refuse, r.Method, head(r.Method, t, "")))
		}
		return out
	}
	// body is a request of r's with a body that extra declares, start begins and more continues.
	body := func(r Route, extra, start string, more func(net.Conn, <-chan struct{})) []probe {
		p := mk(r, false, r.Method, head(r.Method, r.validPath(), extra)+start)
		p.more = more
		return []probe{p}
	}
	list := []routeAttack{
		{"valid requests", false, each(func(r Route) []probe { return same(r, false, r.validPath()) })},
		{"hostile path parameters", true, each(func(r Route) []probe {
			var targets []string
			for _, name := range slices.Sorted(maps.Keys(hostileParams)) {
				targets = append(targets, r.hostilePaths(hostileParams[name])...)
			}
			return same(r, true, targets...)
		})},
		{"mangled request lines", true, each(func(r Route) []probe {
			m, p := r.Method, r.validPath()
			raws := []string{
				m + "  " + p + " HTTP/1.1\r\nHost: t\r\n" + ident + "\r\n",           // two spaces
				m + " " + p + " HTTP/1.1 x\r\nHost: t\r\n" + ident + "\r\n",          // a fourth field
				m + " " + p + "\r\nHost: t\r\n" + ident + "\r\n",                     // no version
				m + " " + p + " HTTP/9.9\r\nHost: t\r\n" + ident + "\r\n",            // an unknown version
				m + " " + p + " HTTP/1.1\r\n" + ident + "\r\n",                       // no Host
				m + " " + p + " HTTP/1.1\r\nHost: t\r\nHost: u\r\n" + ident + "\r\n", // two Hosts
				m + " " + p + " HTTP/1.1\rHost: t\r\n" + ident + "\r\n",              // a lone CR
				m + "\t" + p + " HTTP/1.1\r\nHost: t\r\n" + ident + "\r\n",           // a tab for a space
				head(strings.ToLower(m), p, ""),                                      // a method in lower case
				head(m, strings.TrimPrefix(p, "/")+"x", ""),                          // no leading slash
				head(m, r.withQuery("x="+strings.Repeat("a", 64<<10)), ""),           // a query over the head limit
			}
			out := make([]probe, 0, len(raws))
			for _, raw := range raws {
				out = append(out, mk(r, true, m, raw))
			}
			return out
		})},
		{"escapes and NULs in targets", true, each(func(r Route) []probe {
			p := r.validPath()
			return same(r, true,
				p+"\x00", p+"%00", p+"%", p+"%zz", "/%2e%2e"+p, "/%c0%ae%c0%ae"+p, "/..%2F"+p[1:],
				strings.ReplaceAll(p, "/", "%2F"), "//"+p+"/..", p+"/%00/")
		})},
		{"bare LFs", false, each(func(r Route) []probe {
			lf := strings.ReplaceAll(ident, "\r\n", "\n")
			return []probe{
				mk(r, false, r.Method, r.Method+" "+r.validPath()+" HTTP/1.1\nHost: t\n"+lf+"\n"),
				mk(r, false, r.Method, r.Method+" "+r.validPath()+" HTTP/1.1\r\nHost: t\n"+lf+"\r\n"),
			}
		})},
		{"odd queries", false, each(func(r Route) []probe {
			p := r.validPath()
			return same(r, false,
				r.withQuery("q="+strings.Repeat("a", 12<<10)), r.withQuery("%zz"), r.withQuery(strings.Repeat("&", 2000)),
				r.withQuery("a=%00&b=%FF"), r.withQuery("="), r.withQuery("posts=..%2F&cursor=%00&limit=-1"), p+"#fragment",
				"http://t"+p)
		})},
		{"repeated parameters", false, each(func(r Route) []probe {
			var q []string
			for _, n := range names(r) {
				for range 100 {
					q = append(q, n+"=1")
				}
			}
			return same(r, false, r.withQuery(strings.Join(q, "&")))
		})},
		{"huge parameter values", false, each(func(r Route) []probe {
			var targets []string
			for _, n := range names(r) {
				targets = append(targets,
					r.withQuery(n+"="+strings.Repeat("9", 9<<10)),
					r.withQuery(n+"="+strings.Repeat("1,", 4<<10)),
					r.withQuery(n+"=99999999999999999999999999"))
			}
			return same(r, false, targets...)
		})},
		{"wrong methods", true, func(routes []Route) []probe {
			var out []probe
			for _, r := range wrongMethods(routes) {
				out = append(out, mk(r, true, r.Method, head(r.Method, r.validPath(), "")))
			}
			return out
		}},
		{"made-up methods", true, each(func(r Route) []probe {
			p := r.validPath()
			var out []probe
			for _, m := range []string{"FOO", "PROPFIND", "BREW", strings.Repeat("M", 1024), "G(T", "G\x7fT"} {
				out = append(out, mk(r, true, m, head(m, p, "")))
			}
			return out
		})},
		{"declared bodies that never come", false, each(func(r Route) []probe {
			return body(r, "Content-Type: application/json\r\nContent-Length: 100\r\n", "", nil)
		})},
		{"slow bodies", false, each(func(r Route) []probe {
			return body(r, "Content-Type: application/json\r\nContent-Length: 100000\r\n", "{", trickleBody(tg))
		})},
		{"100 MB bodies", false, each(func(r Route) []probe {
			return body(r, "Content-Type: application/json\r\nContent-Length: 104857600\r\n", "", hugeBody)
		})},
		{"chunked bodies that never end", false, each(func(r Route) []probe {
			return body(r, "Transfer-Encoding: chunked\r\n", "ffffff\r\n", trickleBody(tg))
		})},
	}
	out := make([]attack, 0, len(list))
	for _, ra := range list {
		out = append(out, attack{ra.name + " on every route", func(t *testing.T, tg Target) {
			probes := ra.probes(routes)
			var before int64
			if ra.refuse && tg.Stored != nil {
				before = tg.Stored(t)
			}
			for _, err := range checkAll(tg, probes) {
				t.Error(err)
			}
			if ra.refuse && tg.Stored != nil {
				if after := tg.Stored(t); after != before {
					t.Errorf("%d hostile requests changed what is stored: %d before, %d after", len(probes), before, after)
				}
			}
		}})
	}
	return out
}

var paramName = regexp.MustCompile(`\{([^}:]*)`)

// names are the query parameters tried on r: queryNames and its own path parameters' names.
func names(r Route) []string {
	out := slices.Clone(queryNames)
	for _, m := range paramName.FindAllStringSubmatch(r.Pattern, -1) {
		out = append(out, m[1])
	}
	return out
}

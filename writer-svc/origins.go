package main

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/likes/likes/pkg/serve"
)

// originGuard refuses, with a 403 and before any handler (so before Redis and before any budget
// is spent), a request that changes something (any method but GET, HEAD and OPTIONS) sent by a
// browser on behalf of a page whose origin is not allowed: the page's own site (the Origin's host
// is the Host the request was sent to) or one of allowed ("*": any). Without it any web page
// could make its visitors' browsers POST /session or like, as a simple no-cors request needs no
// preflight, and spend the budget of everyone behind their address.
//
// A browser names the page's origin on every such request (Origin; a sandboxed or opaque page
// sends "null", which is refused). A request with no Origin is refused only when the browser says
// it came from another site (Sec-Fetch-Site: cross-site); otherwise it is not a browser's
// (curl, a server, a test) and passes, so no custom header is required of API clients: the
// origin, which a page cannot forge, is what decides.
func originGuard(allowed []string) func(http.Handler) http.Handler {
	anyOrigin := slices.Contains(allowed, "*")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				next.ServeHTTP(w, r)
				return
			}
			origin := r.Header.Get("Origin")
			ok := anyOrigin
			switch {
			case ok:
			case origin == "":
				ok = r.Header.Get("Sec-Fetch-Site") != "cross-site"
			default:
				ok = slices.Contains(allowed, origin) || sameSite(origin, r.Host)
			}
			if !ok {
				serve.Error(w, http.StatusForbidden, "this origin may not change likes or sessions here; the site's operator lists allowed origins in ALLOWED_ORIGINS")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// sameSite reports whether origin names host, the authority the request was sent to (whatever
// the scheme: a balancer in front may end TLS).
func sameSite(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

package hostiletest

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
)

// Route is one route of the router under attack: a method and its chi pattern.
type Route struct {
	Method  string
	Pattern string // "/like/{postID}", "/assets/*"
	Any     bool   // registered for every method (chi's Handle): no method is wrong for it
	Valid   string // a request path the service serves for it (Target.Valid), or "" for the sample
}

// validParam stands in for every path parameter and wildcard in a request the service should
// serve; the hostile values stand in for them in requests it must refuse.
const validParam = "1"

// hostileParams are path parameter values that no route may take for a valid one: a traversal,
// an id of 9 KB, a NUL, Unicode (escaped, and raw in the request line), an invalid UTF-8 byte,
// escaped dots. Every one is outside the services' id grammar (pkg/ids) and their file names.
var hostileParams = map[string]string{
	"traversal":     "..%2F..%2Fgo.mod",
	"9 KB id":       strings.Repeat("9", 9<<10),
	"NUL":           "%00",
	"Unicode":       "%E2%80%AEt%C3%A9",
	"raw Unicode":   "t\u00e9\u202e",
	"invalid UTF-8": "%FF%FE",
	"escaped dots":  "%2e%2e",
}

// anyMethod is how many methods chi lists for a route registered for every method (Handle): such
// a route is attacked as a GET and a POST only, its handler's own answer to the rest being the
// same code.
const anyMethod = 8

// walkRoutes lists every route of router (chi.Walk), each with its valid path from valid, sorted
// so that failures read the same each run.
func walkRoutes(router http.Handler, valid map[string]string) ([]Route, error) {
	mux, ok := router.(chi.Routes)
	if !ok {
		return nil, fmt.Errorf("the router is a %T, not a chi router", router)
	}
	methods := map[string][]string{}
	err := chi.Walk(mux, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		methods[pattern] = append(methods[pattern], method)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Route
	for pattern, ms := range methods {
		anyM := len(ms) >= anyMethod
		if anyM {
			ms = []string{http.MethodGet, http.MethodPost}
		}
		for _, m := range ms {
			out = append(out, Route{Method: m, Pattern: pattern, Any: anyM, Valid: valid[pattern]})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the router has no routes")
	}
	for pattern := range valid {
		if methods[pattern] == nil {
			return nil, fmt.Errorf("a valid path is given for %s, which the router does not have", pattern)
		}
	}
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(strings.Compare(a.Pattern, b.Pattern), strings.Compare(a.Method, b.Method))
	})
	return out, nil
}

var paramPattern = regexp.MustCompile(`\{[^}]*\}`)

// hostilePaths are the route's paths with value in place of each parameter, the wildcard, and
// each value of the valid path's query; none if it has none of them.
func (r Route) hostilePaths(value string) []string {
	var out []string
	if paramPattern.MatchString(r.Pattern) || strings.HasSuffix(r.Pattern, "*") {
		out = append(out, r.path(value))
	}
	if p, q, ok := strings.Cut(r.validPath(), "?"); ok {
		for i, kv := range strings.Split(q, "&") {
			k, _, _ := strings.Cut(kv, "=")
			vals := strings.Split(q, "&")
			vals[i] = k + "=" + value
			out = append(out, p+"?"+strings.Join(vals, "&"))
		}
	}
	return out
}

// path is the route's request path with value in place of each parameter and of the wildcard
// (the valid value names a file, app.js, for a wildcard).
func (r Route) path(value string) string {
	p := paramPattern.ReplaceAllString(r.Pattern, value)
	if s, ok := strings.CutSuffix(p, "*"); ok {
		if value == validParam {
			value = "app.js"
		}
		p = s + value
	}
	return p
}

// validPath is a path the service serves for the route: Valid, or the pattern with valid
// parameters.
func (r Route) validPath() string {
	if r.Valid != "" {
		return r.Valid
	}
	return r.path(validParam)
}

// withQuery is the route's valid path with q added to its query.
func (r Route) withQuery(q string) string {
	p := r.validPath()
	if strings.Contains(p, "?") {
		return p + "&" + q
	}
	return p + "?" + q
}

// otherMethods are the methods the suite tries on a route that does not take them.
var otherMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch,
	http.MethodTrace, http.MethodConnect}

// wrongMethods lists, per route path, the methods of otherMethods that no route of that pattern
// takes.
func wrongMethods(routes []Route) []Route {
	taken := map[string][]string{}
	for _, r := range routes {
		taken[r.Pattern] = append(taken[r.Pattern], r.Method)
	}
	var out []Route
	for _, r := range routes {
		if r.Any || taken[r.Pattern] == nil {
			continue
		}
		for _, m := range otherMethods {
			if !slices.Contains(taken[r.Pattern], m) {
				out = append(out, Route{Method: m, Pattern: r.Pattern})
			}
		}
		taken[r.Pattern] = nil // once per pattern
	}
	return out
}

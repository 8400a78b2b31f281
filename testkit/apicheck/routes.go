package apicheck

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/go-chi/chi/v5"
)

// Problems compares s with the chi router r, one sentence per mismatch: a routed path the
// document does not list, a method routed on a path that the document does not list for it, and a
// documented operation the router does not route. A chi pattern's parameters and a trailing
// wildcard match the document's path parameters ("/assets/*" is "/assets/{name}"). A route that
// takes every method (chi's Handle: a handler that answers the methods it serves and 405 to the
// rest) needs its GET documented, and serves whatever methods the document lists for it. A
// documented OPTIONS is a CORS preflight, which middleware answers before routing: no route needed.
func (s *Spec) Problems(r http.Handler) []string {
	routes, ok := r.(chi.Routes)
	if !ok {
		return []string{fmt.Sprintf("the router is a %T, not a chi router", r)}
	}
	routed := map[string][]string{} // shape -> methods
	pattern := map[string]string{}  // shape -> a chi pattern, for the reports
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		k := shape(route)
		routed[k] = append(routed[k], method)
		pattern[k] = route
		return nil
	})
	if err != nil {
		return []string{fmt.Sprintf("walk the router: %v", err)}
	}
	documented := map[string][]string{}
	docPath := map[string]string{}
	for path, item := range s.Doc.Paths.Map() {
		k := shape(path)
		docPath[k] = path
		for method := range item.Operations() {
			documented[k] = append(documented[k], method)
		}
	}
	var out []string
	for _, k := range sortedKeys(routed) {
		methods := routed[k]
		docd, ok := documented[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s routes %s, which its OpenAPI document does not list", s.Name, pattern[k]))
		case anyMethod(methods):
			if !slices.Contains(docd, http.MethodGet) {
				out = append(out, fmt.Sprintf("%s routes %s (any method), and its document lists no GET for it", s.Name, pattern[k]))
			}
		default:
			for _, m := range methods {
				if !slices.Contains(docd, m) {
					out = append(out, fmt.Sprintf("%s routes %s %s, which its document does not list", s.Name, m, pattern[k]))
				}
			}
		}
	}
	for _, k := range sortedKeys(documented) {
		methods, ok := routed[k]
		for _, m := range documented[k] {
			if m == http.MethodOptions {
				continue // a CORS preflight, answered by middleware before routing
			}
			if !ok || !anyMethod(methods) && !slices.Contains(methods, m) {
				out = append(out, fmt.Sprintf("%s's document lists %s %s, which its router does not route", s.Name, m, docPath[k]))
			}
		}
	}
	slices.Sort(out)
	return out
}

var (
	params   = regexp.MustCompile(`\{[^}]*\}`)
	wildcard = regexp.MustCompile(`\*$`)
)

// shape is a path with its parameters and a trailing wildcard made alike: "/like/{}".
func shape(p string) string { return wildcard.ReplaceAllString(params.ReplaceAllString(p, "{}"), "{}") }

// chiMethods are the methods chi routes a Handle route for.
var chiMethods = []string{http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead,
	http.MethodOptions, http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace}

// anyMethod reports whether methods are every method chi knows: a Handle route.
func anyMethod(methods []string) bool {
	return !slices.ContainsFunc(chiMethods, func(m string) bool { return !slices.Contains(methods, m) })
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

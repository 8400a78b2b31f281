package hostiletest

import (
	"net/http"
	"slices"
	"testing"

	"github.com/go-chi/chi/v5"
)

// TestWalkRoutesListsEveryRoute: a route added to the router is attacked with no edit to the
// suite; a route taking every method is attacked as a GET and a POST and has no wrong method;
// a valid path named for a route the router lacks is an error, not a silently skipped route.
func TestWalkRoutesListsEveryRoute(t *testing.T) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	r := chi.NewRouter()
	r.Get("/count/{postID}", ok)
	r.Post("/like/{postID}", ok)
	r.Delete("/like/{postID}", ok)
	r.Handle("/metrics", ok)
	routes, err := walkRoutes(r, map[string]string{"/count/{postID}": "/count/7"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{
		{Method: http.MethodGet, Pattern: "/count/{postID}", Valid: "/count/7"},
		{Method: http.MethodDelete, Pattern: "/like/{postID}"},
		{Method: http.MethodPost, Pattern: "/like/{postID}"},
		{Method: http.MethodGet, Pattern: "/metrics", Any: true},
		{Method: http.MethodPost, Pattern: "/metrics", Any: true},
	}
	if !slices.Equal(routes, want) {
		t.Errorf("walkRoutes = %+v; want %+v", routes, want)
	}
	for _, w := range wrongMethods(routes) {
		if w.Pattern == "/metrics" || w.Pattern == "/like/{postID}" && (w.Method == http.MethodPost || w.Method == http.MethodDelete) {
			t.Errorf("wrong method %s %s: the route takes it", w.Method, w.Pattern)
		}
	}
	if _, err := walkRoutes(r, map[string]string{"/gone": "/gone"}); err == nil {
		t.Error("a valid path for a route the router lacks was accepted")
	}
}

// TestHostilePathsReplaceParametersAndQueryValues: each parameter, the wildcard, and each value
// of the valid path's query takes the hostile value, one place at a time for the query.
func TestHostilePathsReplaceParametersAndQueryValues(t *testing.T) {
	for _, c := range []struct {
		r    Route
		want []string
	}{
		{Route{Pattern: "/react/{postID}/{kind}"}, []string{"/react/%00/%00"}},
		{Route{Pattern: "/assets/*"}, []string{"/assets/%00"}},
		{Route{Pattern: "/healthz"}, nil},
		{Route{Pattern: "/sse", Valid: "/sse?posts=1,2&x=y"}, []string{"/sse?posts=%00&x=y", "/sse?posts=1,2&x=%00"}},
	} {
		if got := c.r.hostilePaths("%00"); !slices.Equal(got, c.want) {
			t.Errorf("%s: hostilePaths = %q; want %q", c.r.Pattern, got, c.want)
		}
	}
	if got := (Route{Pattern: "/assets/*"}).validPath(); got != "/assets/app.js" {
		t.Errorf("validPath of a wildcard = %q", got)
	}
}

package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestOtherSitesCannotSpendBudgets: a request that changes something, sent by a browser for a
// page of a site not allowed, is refused with a JSON 403 before Redis (no session budget spent,
// no like stored); the allowed site, the API's own site, and clients that are not browsers pass;
// reads pass from anywhere.
func TestOtherSitesCannotSpendBudgets(t *testing.T) {
	w := startWriter(t, nil, "--sessions", trustHeader, "--cors-origins", "http://good.example")
	host := strings.TrimPrefix(w.URL, "http://")
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers []string
		want    int
	}{
		{"another site's session", http.MethodPost, "/session", []string{"Origin: http://evil.example"}, http.StatusForbidden},
		{"an opaque origin's session", http.MethodPost, "/session", []string{"Origin: null"}, http.StatusForbidden},
		{"a cross-site request without Origin", http.MethodPost, "/session", []string{"Sec-Fetch-Site: cross-site"}, http.StatusForbidden},
		{"another site's like", http.MethodPost, "/like/o1", []string{"Origin: http://evil.example", "X-User-ID: u1"}, http.StatusForbidden},
		{"another site's unlike", http.MethodDelete, "/like/o1", []string{"Origin: http://evil.example", "X-User-ID: u1"}, http.StatusForbidden},
		{"another site's reaction", http.MethodPost, "/react/o1/clap", []string{"Origin: http://evil.example", "X-User-ID: u1"}, http.StatusForbidden},
		{"another site's erasure", http.MethodDelete, "/me/likes", []string{"Origin: http://evil.example", "X-User-ID: u1"}, http.StatusForbidden},
		{"a lookalike of the allowed site", http.MethodPost, "/like/o1", []string{"Origin: http://good.example.evil.example", "X-User-ID: u1"}, http.StatusForbidden},
	} {
		before := w.dataKeys(t)
		got := w.do(t, tc.method, tc.path, tc.headers...)
		if got.Status != tc.want || got.Body["error"] == nil {
			t.Errorf("%s: %d %s; want %d with a JSON error", tc.name, got.Status, got.Raw, tc.want)
		}
		if after := w.dataKeys(t); after != before {
			t.Errorf("%s: Redis went from %d to %d keys; want nothing written (no budget spent)", tc.name, before, after)
		}
	}
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers []string
	}{
		{"the allowed site's like", http.MethodPost, "/like/o1", []string{"Origin: http://good.example", "X-User-ID: u2"}},
		{"the API's own site's like", http.MethodPost, "/like/o1", []string{"Origin: http://" + host, "X-User-ID: u3"}},
		{"a client that is not a browser", http.MethodPost, "/like/o1", []string{"X-User-ID: u4"}},
		{"a same-site request without Origin", http.MethodPost, "/session", []string{"Sec-Fetch-Site: same-site"}},
		{"another site's read", http.MethodGet, "/count/o1", []string{"Origin: http://evil.example"}},
	} {
		if got := w.do(t, tc.method, tc.path, tc.headers...); got.Status != http.StatusOK {
			t.Errorf("%s: %d %s; want 200", tc.name, got.Status, got.Raw)
		}
	}
	if n := w.count(t, "o1"); n != 3 {
		t.Errorf("count %d; want the 3 allowed likes", n)
	}
}

// TestAllowedOriginsWidensCORS: ALLOWED_ORIGINS names the sites that may change likes apart
// from CORS_ORIGINS; "*" allows every site, as a deployment may choose.
func TestAllowedOriginsWidensCORS(t *testing.T) {
	srv := startWriter(t, nil, trustHeader, "--cors-origins", "http://a.example", "--allowed-origins", "http://b.example")
	if got := srv.like(t, "o2", "u1"); got.Status != http.StatusOK {
		t.Fatalf("no Origin: %d", got.Status)
	}
	for origin, want := range map[string]int{"http://b.example": http.StatusOK, "http://a.example": http.StatusForbidden} {
		if got := srv.do(t, http.MethodPost, "/like/o2", "Origin: "+origin, "X-User-ID: u2"); got.Status != want {
			t.Errorf("%s: %d; want %d (ALLOWED_ORIGINS, when set, is the list)", origin, got.Status, want)
		}
	}
	open := startWriter(t, nil, trustHeader, "--allowed-origins", "*")
	if got := open.do(t, http.MethodPost, "/like/o3", "Origin: http://anywhere.example", "X-User-ID: u1"); got.Status != http.StatusOK {
		t.Errorf(`ALLOWED_ORIGINS=*: %d; want 200`, got.Status)
	}
}

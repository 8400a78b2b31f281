package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/openapi"
	"github.com/likes/likes/testkit/apicheck"
	"github.com/likes/likes/testkit/redistest"
)

// TestOpenAPIDocumentsTheRouter walks the writer's router as run builds it against its OpenAPI
// document (pkg/openapi/writer.json): a route added without its document, or an operation
// documented that the router does not serve, fails here.
func TestOpenAPIDocumentsTheRouter(t *testing.T) {
	a, _, _ := buildWriter(t, "--redis-url", redistest.Start(t).URL)
	for _, p := range apicheck.Writer().Problems(a.handler) {
		t.Error(p)
	}
}

// TestOpenAPIServed: GET /openapi.json answers the embedded document, and the reply is itself
// as the document says (apicheck).
func TestOpenAPIServed(t *testing.T) {
	a, _, _ := buildWriter(t, "--redis-url", redistest.Start(t).URL)
	srv := httptest.NewServer(a.handler)
	defer srv.Close()
	apicheck.Serve(t, srv.Listener.Addr().String(), apicheck.Writer())
	c := &http.Client{Transport: apicheck.Wrap(nil)}
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL + openapi.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || string(body) != string(openapi.Writer()) {
		t.Errorf("GET %s: %d %q, %d bytes; want 200 application/json, the %d-byte document",
			openapi.Path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), len(openapi.Writer()))
	}
}

// TestOpenAPIRepliesMatch sends one request of each kind the writer answers, good and bad,
// through apicheck: each reply must be as the document says (a failure is reported by the
// transport, with the request, the reply and the validator's error).
func TestOpenAPIRepliesMatch(t *testing.T) {
	w := startWriter(t, nil, "--admin-token", testAdminToken)
	apicheck.Serve(t, strings.TrimPrefix(w.URL, "http://"), apicheck.Writer())
	c := &http.Client{Transport: apicheck.Wrap(nil)}
	defer c.CloseIdleConnections()
	do := func(method, path, token string, body io.Reader) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, w.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	code, body := do(http.MethodPost, "/session", "", nil)
	var s struct {
		Token string `json:"token"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &s) != nil {
		t.Fatalf("POST /session: %d %s", code, body)
	}
	from := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	for _, tt := range []struct {
		method, path string
		token        string
		want         int
	}{
		{http.MethodGet, "/counts?posts=a,b", "", http.StatusOK}, // before any reaction: reactions {}
		{http.MethodGet, "/posts/a/timeline", "", http.StatusOK}, // no activity: no peaks
		{http.MethodPost, "/like/a", s.Token, http.StatusOK},
		{http.MethodPost, "/like/a", s.Token, http.StatusOK},
		{http.MethodPost, "/like/a", "", http.StatusUnauthorized},
		{http.MethodPost, "/like/bad$id", s.Token, http.StatusBadRequest},
		{http.MethodPost, "/react/a/clap", s.Token, http.StatusOK},
		{http.MethodPost, "/react/a/clap", s.Token, http.StatusTooManyRequests},
		{http.MethodPost, "/react/a/nope", s.Token, http.StatusBadRequest},
		{http.MethodGet, "/count/a", "", http.StatusOK},
		{http.MethodGet, "/counts?posts=a,b", "", http.StatusOK},
		{http.MethodGet, "/counts", "", http.StatusBadRequest},
		{http.MethodGet, "/likes?posts=a,b", s.Token, http.StatusOK},
		{http.MethodGet, "/likes/a/users?limit=1", "", http.StatusOK},
		{http.MethodGet, "/likes/a/users?limit=0", "", http.StatusBadRequest},
		{http.MethodGet, "/me/likes", s.Token, http.StatusOK},
		{http.MethodGet, "/me/likes?cursor=nope", s.Token, http.StatusBadRequest},
		{http.MethodGet, "/posts/a/timeline?from=" + from, "", http.StatusOK},
		{http.MethodGet, "/posts/a/timeline?format=csv&from=" + from, "", http.StatusOK},
		{http.MethodGet, "/posts/a/timeline?step=0", "", http.StatusBadRequest},
		{http.MethodDelete, "/like/a", s.Token, http.StatusOK},
		{http.MethodDelete, "/me/likes", s.Token, http.StatusOK},
		{http.MethodGet, "/admin/users/u1/likes", testAdminToken, http.StatusOK},
		{http.MethodGet, "/admin/users/u1/likes", s.Token, http.StatusForbidden},
		{http.MethodDelete, "/admin/users/u1/likes", testAdminToken, http.StatusOK},
		{http.MethodPost, "/session/refresh", s.Token, http.StatusOK},
		{http.MethodPost, "/session/refresh", "forged", http.StatusUnauthorized},
		{http.MethodGet, "/healthz", "", http.StatusOK},
		{http.MethodGet, "/readyz", "", http.StatusOK},
		{http.MethodGet, "/metrics", "", http.StatusOK},
		{http.MethodGet, openapi.Path, "", http.StatusOK},
		{http.MethodGet, "/nope", "", http.StatusNotFound},
		{http.MethodPut, "/like/a", s.Token, http.StatusMethodNotAllowed},
	} {
		if code, body := do(tt.method, tt.path, tt.token, nil); code != tt.want {
			t.Errorf("%s %s: %d %s; want %d", tt.method, tt.path, code, body, tt.want)
		}
	}
	if code, body := do(http.MethodPost, "/like/a", s.Token, strings.NewReader(strings.Repeat("x", maxBody+1))); code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /like/a with a %d-byte body: %d %s; want 413", maxBody+1, code, body)
	}
}

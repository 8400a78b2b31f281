package apicheck

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
)

// testDoc is a small document: a JSON reply with a required header, an error, and a stream.
const testDoc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/count/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {"responses": {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "required": ["count"], "properties": {"count": {"type": "integer", "minimum": 0}}, "additionalProperties": false}}}},
        "429": {"description": "limited", "headers": {"Retry-After": {"required": true, "schema": {"type": "integer", "minimum": 1}}},
                "content": {"application/json": {"schema": {"type": "object", "required": ["error"]}}}}
      }}
    },
    "/sse": {"get": {"responses": {"200": {"description": "stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}}}}
  }
}`

// recorder stands in for a test: it keeps what Transport reports.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) reports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// testServer answers each path as the case says: the reply under test.
func testServer(t *testing.T) *httptest.Server {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("give")
		switch {
		case r.URL.Path == "/sse":
			w.Header().Set("Content-Type", q)
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "data: x\n\n")
			http.NewResponseController(w).Flush()
			select { // a stream never ends: only its head may be read
			case <-r.Context().Done():
			case <-stop:
			}
		case q == "429-no-retry-after":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"slow down"}`)
		case q == "429":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"slow down"}`)
		case q == "418":
			w.WriteHeader(http.StatusTeapot)
		case q == "404":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"not found"}`)
		case q == "405":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = io.WriteString(w, `{"error":"method not allowed"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, q)
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

func TestTransport(t *testing.T) {
	spec, err := Load("test-svc", []byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path string
		wantErr            string // "" for a reply as documented
	}{
		{"as documented", "GET", `/count/1?give={"count":3}`, ""},
		{"body off its schema", "GET", `/count/1?give={"count":-1}`, "doesn't match schema"},
		{"an extra field", "GET", `/count/1?give={"count":1,"x":2}`, "doesn't match schema"},
		{"not JSON", "GET", `/count/1?give=nope`, "failed to decode"},
		{"documented error", "GET", "/count/1?give=429", ""},
		{"missing header", "GET", "/count/1?give=429-no-retry-after", `"Retry-After" missing`},
		{"undocumented status", "GET", "/count/1?give=418", "status is not supported"},
		{"unlisted path answered 404", "GET", "/nope?give=404", ""},
		{"unlisted path answered", "GET", "/nope?give={}", "does not list /nope"},
		{"unlisted method answered 405", "POST", "/count/1?give=405", ""},
		{"unlisted method answered", "POST", `/count/1?give={"count":1}`, "not its method POST"},
		{"stream head only", "GET", "/sse?give=text/event-stream", ""},
		{"stream of another type", "GET", "/sse?give=text/plain", `content type "text/plain" is not documented`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testServer(t)
			rec := &recorder{TB: t}
			Serve(rec, srv.Listener.Addr().String(), spec)
			c := &http.Client{Transport: Wrap(nil)}
			defer c.CloseIdleConnections()
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tt.path, "/sse") { // the stream's first frame is still there to read
				buf := make([]byte, 4)
				if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "data" {
					t.Errorf("stream body %q, %v; want its first bytes unread by the check", buf, err)
				}
			} else if body, _ := io.ReadAll(resp.Body); len(body) == 0 && resp.StatusCode != http.StatusTeapot {
				t.Error("the body was not given back after the check")
			}
			_ = resp.Body.Close()
			got := rec.reports()
			switch {
			case tt.wantErr == "" && len(got) > 0:
				t.Errorf("reported %q; want nothing", got)
			case tt.wantErr != "" && (len(got) != 1 || !strings.Contains(got[0], tt.wantErr)):
				t.Errorf("reported %q; want one report containing %q", got, tt.wantErr)
			}
		})
	}
}

// TestTransportSkips: an address no test registered, and a request marked Unchecked, pass.
func TestTransportSkips(t *testing.T) {
	spec, err := Load("test-svc", []byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	srv := testServer(t)
	c := &http.Client{Transport: Wrap(nil)}
	defer c.CloseIdleConnections()
	get := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/nope?give={}", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	get(context.Background()) // not registered
	rec := &recorder{TB: t}
	Serve(rec, srv.Listener.Addr().String(), spec)
	get(Unchecked(context.Background()))
	if got := rec.reports(); len(got) > 0 {
		t.Errorf("reported %q; want nothing", got)
	}
	get(context.Background())
	if got := rec.reports(); len(got) != 1 {
		t.Errorf("reported %q; want the registered, checked request reported", got)
	}
}

func TestProblems(t *testing.T) {
	spec, err := Load("test-svc", []byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	ok := func(http.ResponseWriter, *http.Request) {}
	r := chi.NewRouter()
	r.Get("/count/{postID}", ok)
	r.Post("/count/{postID}", ok)
	r.Handle("/sse", http.HandlerFunc(ok))
	r.Get("/extra", ok)
	got := spec.Problems(r)
	want := []string{
		"test-svc routes /extra, which its OpenAPI document does not list",
		"test-svc routes POST /count/{postID}, which its document does not list",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r2 := chi.NewRouter()
	r2.Get("/sse", ok)
	if got := spec.Problems(r2); len(got) != 1 || !strings.Contains(got[0], "lists GET /count/{id}, which its router does not route") {
		t.Errorf("Problems = %q; want the unrouted GET /count/{id}", got)
	}
}

// TestServiceDocumentsLoad: the services' documents load as Specs.
func TestServiceDocumentsLoad(t *testing.T) {
	for _, name := range []string{"writer-svc", "fanout-svc"} {
		if s := ForService(name); s == nil || s.Doc.Paths.Len() == 0 {
			t.Errorf("ForService(%q) = %v; want its document", name, s)
		}
	}
	if ForService("loadgen") != nil {
		t.Error(`ForService("loadgen") is a document; want nil`)
	}
}

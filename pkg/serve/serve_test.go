package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
)

func TestRecoverAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewRequestMetrics(reg, "t")
	r := chi.NewRouter()
	r.Use(m.Middleware, Recover(zaptest.NewLogger(t)))
	r.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	srv := httptest.NewServer(r)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/boom")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 500 || body.Error == "" {
		t.Fatalf("got %d %+v %v; want 500 with a JSON error", resp.StatusCode, body, err)
	}
	if n := testutil.ToFloat64(m.requests.WithLabelValues("/boom", "GET", "500")); n != 1 {
		t.Errorf("counted %v requests; want 1", n)
	}
}

func TestHealth(t *testing.T) {
	r := chi.NewRouter()
	var down bool
	Health(r, func(context.Context) error {
		if down {
			return errors.New("redis down")
		}
		return nil
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	for _, tt := range []struct {
		down bool
		path string
		want int
	}{{false, "/readyz", 200}, {true, "/readyz", 503}, {true, "/healthz", 200}} {
		down = tt.down
		resp, err := http.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s (down=%v): got %d; want %d", tt.path, tt.down, resp.StatusCode, tt.want)
		}
		if tt.want == 503 && !strings.Contains(resp.Header.Get("Content-Type"), "json") {
			t.Errorf("503 is not JSON")
		}
	}
}

// TestLimitBody: a declared body over the limit is refused with a JSON 413 before the handler
// runs; a chunked one is cut at the limit, so the handler's read fails.
func TestLimitBody(t *testing.T) {
	var ran, readErr bool
	h := LimitBody(8)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran = true
		_, err := io.ReadAll(r.Body)
		readErr = err != nil
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("123456789")))
	if rec.Code != http.StatusRequestEntityTooLarge || ran || !strings.Contains(rec.Body.String(), `"error"`) {
		t.Errorf("9 bytes over a limit of 8: %d %q, handler ran %v; want a JSON 413 and no handler", rec.Code, rec.Body, ran)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("123456789"))
	req.ContentLength = -1 // chunked: length unknown
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !ran || !readErr {
		t.Errorf("chunked body over the limit: handler ran %v, read failed %v; want its read cut", ran, readErr)
	}
}

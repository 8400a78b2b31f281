package serve

import (
	"context"
	"encoding/json"
	"errors"
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

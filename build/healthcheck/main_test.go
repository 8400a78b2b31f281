package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/likes/likes/testkit/freeport"
)

func TestRunStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name   string
		give   string
		wantOK bool
	}{
		{"ready", srv.URL + "/readyz", true},
		{"unavailable", srv.URL + "/other", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), []string{"healthcheck", tt.give}, noEnv, io.Discard)
			if (err == nil) != tt.wantOK {
				t.Errorf("run(%s) = %v; want ok=%v", tt.give, err, tt.wantOK)
			}
		})
	}
}

func TestRunDefaultURLFromListenAddr(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			hits++
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	getenv := func(k string) string {
		if k == "LISTEN_ADDR" {
			return ":" + port
		}
		return ""
	}
	if err := run(context.Background(), []string{"healthcheck"}, getenv, io.Discard); err != nil {
		t.Fatalf("run with LISTEN_ADDR=:%s: %v", port, err)
	}
	if hits != 1 {
		t.Errorf("/readyz hits = %d; want 1", hits)
	}
}

func TestRunRefused(t *testing.T) {
	addr := freeport.Addr(t) // nothing listens there any more
	if err := run(context.Background(), []string{"healthcheck", "http://" + addr + "/readyz"}, noEnv, io.Discard); err == nil {
		t.Errorf("run against closed port %s = nil; want error", addr)
	}
}

func TestDefaultURL(t *testing.T) {
	tests := []struct {
		give    string
		want    string
		wantErr bool
	}{
		{give: ":8080", want: "http://127.0.0.1:8080/readyz"},
		{give: "0.0.0.0:8090", want: "http://127.0.0.1:8090/readyz"},
		{give: "", wantErr: true},
		{give: "8080", wantErr: true},
	}
	for _, tt := range tests {
		got, err := defaultURL(tt.give)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("defaultURL(%q) = %q, %v; want %q, err=%v", tt.give, got, err, tt.want, tt.wantErr)
		}
	}
}

func noEnv(string) string { return "" }

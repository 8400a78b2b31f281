package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestNetHTTPConnectionsAreBounded: connections that hold a request open on net/http (a body
// never sent) take at most MAX_HTTP_CONNS; one more is answered 503 with Retry-After at once.
// Once they are gone, requests are served again; a stream net/http served and the hub took over
// is not counted.
func TestNetHTTPConnectionsAreBounded(t *testing.T) {
	rs := redistest.Start(t)
	base := startNodeEnv(t, map[string]string{"REDIS_URL": rs.URL, "MAX_HTTP_CONNS": "2", "READ_TIMEOUT": "1m"})
	addr := strings.TrimPrefix(base, "http://")
	resp, br, _ := exchange(t, addr, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"+streamRequest("/sse/cap"))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	stream, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	firstData(t, stream) // served by net/http, now the hub's

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	healthz := func() (*http.Response, error) {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	slow := make([]net.Conn, 2)
	for i := range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		slow[i] = c
	}
	poll.Check(t, 5*time.Second, func() error {
		resp, err := healthz()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/json" {
			return fmt.Errorf("with two requests held open: %d %q; want a JSON 503 with Retry-After", resp.StatusCode, resp.Header)
		}
		return nil
	})
	for _, c := range slow {
		c.Close()
	}
	poll.Check(t, 5*time.Second, func() error {
		resp, err := healthz()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("after the held requests closed: %d; want 200", resp.StatusCode)
		}
		return nil
	})
	awaitMetric(t, base, "likes_fanout_http_conns", 1) // the scrape's own connection, not the stream
}

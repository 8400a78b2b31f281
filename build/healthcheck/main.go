package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// probeTimeout bounds one probe; Docker's own health-check timeout kills us later anyway, but a
// clear message beats a kill.
const probeTimeout = 3 * time.Second

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}

// run probes the URL in args[1], or the default URL derived from LISTEN_ADDR.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	var url string
	switch len(args) {
	case 1:
		u, err := defaultURL(getenv("LISTEN_ADDR"))
		if err != nil {
			return err
		}
		url = u
	case 2:
		url = args[1]
	default:
		fmt.Fprintln(stderr, "usage: healthcheck [URL]   (default: http://127.0.0.1:<port of LISTEN_ADDR>/readyz)")
		return fmt.Errorf("want at most one argument, got %d", len(args)-1)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return probe(ctx, url)
}

// defaultURL turns a listen address such as ":8080" or "0.0.0.0:8090" into the loopback URL of
// its readiness endpoint.
func defaultURL(listen string) (string, error) {
	if listen == "" {
		return "", fmt.Errorf("no URL given and LISTEN_ADDR is empty")
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("LISTEN_ADDR %q: %w", listen, err)
	}
	return "http://" + net.JoinHostPort("127.0.0.1", port) + "/readyz", nil
}

// probe GETs url and fails unless the status is 2xx.
func probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("get %s: status %d", url, resp.StatusCode)
	}
	return nil
}

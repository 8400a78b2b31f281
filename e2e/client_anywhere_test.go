package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// crossOriginFailoverPage, served from an origin that is neither node's, loads the client from the
// free node and lists the full node first: the live count must come through the free one.
const crossOriginFailoverPage = `<!doctype html><title>loading</title><script type="module">
import { connect } from "FREE/client/likes.js";
const likes = connect({ streams: ["FULL", "FREE"], writer: "WRITER", session: false, posts: ["ca1"] });
likes.addEventListener("update", () => { document.title = "count " + likes.post("ca1").count; });
</script>`

// TestCrossOriginPageFailsOverFromFullNode: a page on another origin whose first node is full
// (MAX_CONNS=1, held by another viewer) reads that node's 503, moves on to the second node and
// shows the live count, a like included.
func TestCrossOriginPageFailsOverFromFullNode(t *testing.T) {
	redis := redistest.Start(t)
	pageAddr := freeport.Addr(t)
	writer := StartWriter(t, redis.URL, "CORS_ORIGINS=http://"+pageAddr)
	full := StartFanout(t, redis.URL, "MAX_CONNS=1")
	free := StartFanout(t, redis.URL)
	holdStream(t, full.URL+"/sse/held")

	page := strings.NewReplacer("FULL", full.URL, "FREE", free.URL, "WRITER", writer.URL).Replace(crossOriginFailoverPage)
	pageURL := serveHTML(t, pageAddr, page)

	browser := browsertest.Start(t)
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, 60*time.Second)
	defer stop()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	title := func() string {
		s, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.title"))
		return s
	}
	poll.Until(t, 20*time.Second, "the page to show the count via the free node", func() bool { return title() == "count 0" })
	like(t, writer, http.MethodPost, "ca1", "u1", 1)
	poll.Until(t, 20*time.Second, "the like to reach the page", func() bool { return title() == "count 1" })
	if n := full.Metric(t, "likes_fanout_refused_total"); n < 1 {
		t.Errorf("the full node refused %v streams; want the page's first try refused", n)
	}
}

// holdStream keeps one stream open on url until the test ends (it fills a MAX_CONNS=1 node).
func holdStream(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("hold %s: %v %v", url, resp, err)
	}
	t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
}

// serveHTML serves html at every path of addr until the test ends and returns its URL.
func serveHTML(t *testing.T, addr, html string) string {
	t.Helper()
	return serveAt(t, addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(html))
	}))
}

// serveAt serves h on addr, a page origin of its own, until the test ends and returns its URL.
func serveAt(t *testing.T, addr string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: h}
	done := make(chan struct{})
	go func() { // exits when the cleanup closes the server
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + addr
}

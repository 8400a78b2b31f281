package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// clientDir is the npm package @likes/client, whose examples/ this file tests.
var clientDir = filepath.Join("..", "fanout-svc", "internal", "web", "static", "client")

// TestExamplesInBrowser builds the package's React, Vue and plain HTML examples and serves them
// from an origin of their own, as an app's site would be, against a real writer and fanout node.
// In each, Chromium shows the post's count, a click on the like button raises it to the count
// the writer stores, and another user's like arrives live.
func TestExamplesInBrowser(t *testing.T) {
	site := buildExamples(t)
	redis := redistest.Start(t)
	pageAddr := freeport.Addr(t)
	writer := StartWriter(t, redis.URL, "CORS_ORIGINS=http://"+pageAddr)
	fanout := StartFanout(t, redis.URL)
	pages := serveAt(t, pageAddr, http.FileServer(http.Dir(site)))
	browser := browsertest.Start(t)

	for _, name := range []string{"react", "vue", "html"} {
		t.Run(name, func(t *testing.T) {
			post := "example-" + name
			like(t, writer, http.MethodPost, post, "seed-"+name, 1)
			query := url.Values{"streams": {fanout.URL}, "writer": {writer.URL}, "post": {post}}
			p := openPage(t, browser, name, pages+"/"+name+"/?"+query.Encode(), 800, 600)
			waitButtonCount(p, 1)

			p.do(chromedp.Click(chromedp.CSS("like-button .like")))
			poll.Until(t, browserWait, "the writer to store the click's like", func() bool { return storedCount(t, writer, post) == 2 })
			waitButtonCount(p, 2)
			p.waitFor(`document.querySelector("like-button .like").getAttribute("aria-pressed") === "true"`, "the button pressed")

			like(t, writer, http.MethodPost, post, "other-"+name, 3)
			waitButtonCount(p, 3)
			p.checkNoProblems()
		})
	}
}

// waitButtonCount waits until the page's <like-button> shows want likes.
func waitButtonCount(p *browserPage, want int) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`document.querySelector("like-button .count-value")?.dataset.count === "%d"`, want),
		fmt.Sprintf("the like button to show %d", want))
}

// buildExamples builds the examples with the package's esbuild (examples/build.mjs, as npm test
// does) into a temporary directory, one static site per example, and returns it.
func buildExamples(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("node", "examples/build.mjs", out)
	cmd.Dir = clientDir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the client's examples (make js-test installs their node_modules): %v\n%s", err, b)
	}
	return out
}

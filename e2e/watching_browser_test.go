package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/redistest"
)

// TestBrowserWatching opens the page in two browser contexts on two fanout nodes: each post's
// "N watching" counts both, falls when one page navigates away and rises when it comes back.
func TestBrowserWatching(t *testing.T) {
	browser := browsertest.Start(t)
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL, "CORS_ORIGINS=*")
	// A changed number reaches a page with its next count or, here where nobody likes after each
	// post's first like, with the heartbeat: a short one, so that the test does not wait the
	// default 15 s.
	env := []string{"WRITER_PUBLIC_URL=" + writer.URL, "PAGE_POSTS=" + browserPosts, "WATCHING_INTERVAL=500ms", "HEARTBEAT_INTERVAL=500ms"}
	first := StartFanout(t, redis.URL, env...)
	second := StartFanout(t, redis.URL, env...)
	// Only posts that exist (a like gave them a version) are counted.
	for _, post := range strings.Split(browserPosts, ",") {
		if code, body := doRequest(t, "POST", writer.URL+"/like/"+post, "alice"); code != 200 {
			t.Fatalf("like %s: %d %s", post, code, body)
		}
	}

	one := openPage(t, browser, "one", first.URL, 960, 640)
	two := openPage(t, browser, "two", second.URL, 960, 640)
	for _, p := range []*browserPage{one, two} {
		p.waitState("live")
		for _, post := range strings.Split(browserPosts, ",") {
			p.waitWatching(post, 2)
		}
	}
	// The second viewer goes to another page. Chromium keeps the page in its back/forward cache,
	// fetches open, so likes.js closes its streams on pagehide: the number falls.
	two.do(chromedp.Navigate("about:blank"))
	one.waitWatching("cats", 1)
	// Back again: the page comes out of the cache and likes.js reopens its stream.
	two.back()
	two.waitState("live")
	two.waitFor(`document.getElementById("connection").dataset.connects >= 2`, "the stream reopened")
	for _, p := range []*browserPage{one, two} {
		p.waitWatching("cats", 2)
		p.checkNoProblems()
	}
}

// waitWatching waits until the page shows "want watching" for post.
func (p *browserPage) waitWatching(post string, want int) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`(() => {
		const w = document.querySelector('li[data-post=%q] .watching');
		return w && !w.hidden && w.querySelector(".watching-value").dataset.watching === "%d";
	})()`, post, want), fmt.Sprintf("post %s to show %d watching", post, want))
}

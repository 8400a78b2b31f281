package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/testkit/browsertest"
)

// TestBrowserPageSession runs the page against a writer in its default identity mode, where only
// session tokens name a user: reading takes no session, the first like takes one, the like
// follows it through a reload (localStorage), another browser is another user, and a request
// that names a user in X-User-ID is refused without changing any count.
func TestBrowserPageSession(t *testing.T) {
	browser := browsertest.Start(t)
	stack := startPageStack(t, browserPosts, []string{"TRUST_USER_HEADER=false"}, nil)
	writer, fanout := stack.writer, stack.fanout
	const sessionKey = `Object.keys(localStorage).filter((k) => k.startsWith("likes.session:")).length`

	alice := openPage(t, browser, "alice", fanout.URL, 960, 640)
	alice.waitState("live")
	alice.waitCount("42", 0)
	if n := alice.eval(sessionKey); n != "0" {
		t.Errorf("a page that only read keeps %s sessions; want none before the first like", n)
	}
	if got := writer.Metric(t, "likes_writer_sessions_issued_total"); got != 0 {
		t.Errorf("writer issued %v sessions to a page that only read; want 0", got)
	}

	alice.click("42")
	alice.waitCount("42", 1)
	alice.waitPressed("42", true)
	alice.click("cats")
	alice.waitCount("cats", 1)
	if n := alice.eval(sessionKey); n != "1" {
		t.Errorf("alice's page keeps %s sessions after two likes; want 1", n)
	}
	alice.waitFor(`document.getElementById("who").textContent.startsWith("anonymous session ")`, "the session's user on the page")

	status, body := doRequest(t, http.MethodPost, writer.URL+"/like/42", "mallory")
	if status != http.StatusUnauthorized || !strings.Contains(body, "/session") {
		t.Errorf("a like naming its user in X-User-ID = %d %s; want 401 that names POST /session", status, body)
	}

	alice.do(chromedp.Reload())
	alice.waitState("live")
	alice.waitPressed("42", true) // the session, kept in storage, still names alice
	alice.waitPressed("cats", true)
	alice.click("cats") // unlike, as the same user
	alice.waitCount("cats", 0)

	bob := openPage(t, browser, "bob", fanout.URL, 390, 844)
	bob.waitState("live")
	bob.waitCount("42", 1)
	bob.waitPressed("42", false)
	bob.click("42")
	waitCounts([]*browserPage{alice, bob}, "42", 2)
	bob.waitPressed("42", true)

	if got := storedCount(t, writer, "42"); got != 2 {
		t.Errorf("writer stores %d likes of post 42; want 2 (alice's and bob's)", got)
	}
	if got := writer.Metric(t, "likes_writer_sessions_issued_total"); got != 2 {
		t.Errorf("writer issued %v sessions; want 2, one per browser", got)
	}
	for _, p := range []*browserPage{alice, bob} {
		p.checkNoProblems()
	}
}

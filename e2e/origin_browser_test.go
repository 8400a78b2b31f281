package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// sessionTries is a page that asks the writer for sessions the ways a page of any site can
// without a preflight (a no-cors fetch, a form posted into a hidden frame) and the way an allowed
// page does (a CORS fetch), and says in its title when all have been sent.
const sessionTries = `<!doctype html><title>sending</title>
<iframe name="sink" hidden></iframe>
<form id="f" method="post" target="sink"></form>
<script type="module">
const writer = new URLSearchParams(location.search).get("writer");
const f = document.getElementById("f");
f.action = writer + "/session";
f.submit();
await new Promise((r) => document.querySelector("iframe").addEventListener("load", r, { once: true }));
for (let i = 0; i < 3; i++) await fetch(writer + "/session", { method: "POST", mode: "no-cors" }).catch(() => {});
const cors = await fetch(writer + "/session", { method: "POST" }).then((r) => r.status, () => 0);
document.title = "sent " + cors;
</script>`

// TestOtherSiteCannotSpendSessionBudget: in Chromium, a page of a site the writer does not allow
// sends POST /session without a preflight (a form into a hidden frame, no-cors fetches): none
// issues a session or spends the address's session budget. The same page served from the allowed
// origin gets its session, through CORS, as likes.js does.
func TestOtherSiteCannotSpendSessionBudget(t *testing.T) {
	redis := redistest.Start(t)
	goodAddr := freeport.Addr(t)
	writer := StartWriter(t, redis.URL, "CORS_ORIGINS=http://"+goodAddr, "SESSION_RATE=100/1m")
	good := serveHTML(t, goodAddr, sessionTries)
	evil := serveHTML(t, freeport.Addr(t), sessionTries)

	browser := browsertest.Start(t)
	visit := func(page string) string {
		t.Helper()
		tab, cancel := chromedp.NewContext(browser)
		defer cancel()
		ctx, stop := context.WithTimeout(tab, 30*time.Second)
		defer stop()
		if err := chromedp.Do(ctx, chromedp.Navigate(page+"/?writer="+writer.URL)); err != nil {
			t.Fatalf("navigate %s: %v", page, err)
		}
		var title string
		poll.Until(t, 20*time.Second, "the page to send its requests", func() bool {
			title, _ = chromedp.Run(ctx, chromedp.Evaluate[string]("document.title"))
			return len(title) > 5 && title[:5] == "sent "
		})
		return title
	}

	if title := visit(evil); title != "sent 0" {
		t.Errorf("the other site's CORS fetch: %q; want it blocked (status 0)", title)
	}
	if n := writer.Metric(t, "likes_writer_sessions_issued_total"); n != 0 {
		t.Errorf("%v sessions issued to another site's page; want 0", n)
	}
	if n := redis.Client(t).Exists(context.Background(), rediskeys.New("likes:").SessionRate("127.0.0.1")).Val(); n != 0 {
		t.Error("the address's session budget was spent by another site's page")
	}
	if title := visit(good); title != "sent 200" {
		t.Errorf("the allowed site's CORS fetch: %q; want 200", title)
	}
	if n := writer.Metric(t, "likes_writer_sessions_issued_total"); n < 1 {
		t.Errorf("%v sessions issued to the allowed site's page; want at least 1", n)
	}
}

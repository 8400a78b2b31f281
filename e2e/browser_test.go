package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// The page follows these posts; "42" is liked before any browser opens it.
const browserPosts = "42,launch-day,cats"

// browserWait bounds every wait for the page: a like reaches both pages within a blink, and a
// restarted fanout node is reconnected to after the SSE retry delay (2s, jittered), so this
// leaves ample room on a slow CI machine.
const browserWait = 20 * time.Second

// TestBrowserPage opens the live page in two isolated browser contexts (two users, one at phone
// width), likes and unlikes through the page, and checks that both pages show every change. It
// then kills the fanout node, checks both pages say so, likes a post while it is down, restarts it
// on the same address, and checks both pages reconnect, refresh the missed count and show the next
// like. Last, one page goes into the back/forward cache and comes back: no stream while away. Set UPDATE_SCREENSHOT=1 to rewrite docs/screenshot.png from the first page.
func TestBrowserPage(t *testing.T) {
	browser := browsertest.Start(t)
	stack := startPageStack(t, browserPosts, nil, nil)
	writer, fanout := stack.writer, stack.fanout
	like(t, writer, http.MethodPost, "42", "seed-user", 1)

	alice := openPage(t, browser, "alice", fanout.URL, 960, 640)
	bob := openPage(t, browser, "bob", fanout.URL, 390, 844)
	both := []*browserPage{alice, bob}
	for _, p := range both {
		p.waitState("live")
		p.waitCount("42", 1)
		p.waitCount("launch-day", 0)
		p.waitCount("cats", 0)
	}

	t.Run("likes reach every page", func(t *testing.T) {
		alice.click("42")
		waitCounts(both, "42", 2)
		alice.waitPressed("42", true)
		bob.waitPressed("42", false)

		bob.click("42")
		waitCounts(both, "42", 3)
		bob.waitPressed("42", true)

		alice.click("42") // unlike
		waitCounts(both, "42", 2)
		alice.waitPressed("42", false)
		if got := storedCount(t, writer, "42"); got != 2 {
			t.Errorf("writer stores %d likes of post 42; want 2", got)
		}
	})

	t.Run("pages resume after a fanout restart", func(t *testing.T) {
		fanout.Kill()
		for _, p := range both {
			p.waitState("reconnecting")
		}
		like(t, writer, http.MethodPost, "cats", "carol", 1) // published while nobody listens
		fanout.Restart()
		for _, p := range both {
			p.waitFor(`document.getElementById("connection")?.dataset.connects >= 2`, "a second connection")
			p.waitState("live")
			p.waitCount("cats", 1) // the snapshot on reconnect brings the missed like
		}
		like(t, writer, http.MethodPost, "42", "dave", 3)
		waitCounts(both, "42", 3)

		alice.click("launch-day")
		waitCounts(both, "launch-day", 1)
		alice.waitPressed("launch-day", true)

		// Every reconnect resumed from the last event id the page had seen (the query parameter
		// likes.js sends), so the node sent what changed instead of everything.
		for _, p := range both {
			urls := p.streamRequests()
			if len(urls) < 2 || strings.Contains(urls[0], "lastEventId=") {
				t.Fatalf("%s: stream requests %q; want a first one without lastEventId and reconnects", p.name, urls)
			}
			for _, u := range urls[1:] {
				if !strings.Contains(u, "lastEventId=") {
					t.Errorf("%s: reconnect %s does not resume with lastEventId", p.name, u)
				}
			}
		}
	})

	t.Run("a page in the back/forward cache holds no stream", func(t *testing.T) {
		poll.Until(t, browserWait, "both pages' streams", func() bool { return fanout.Metric(t, "likes_fanout_viewers") == 2 })
		connects := bob.eval(`document.getElementById("connection").dataset.connects`)
		bob.do(chromedp.Navigate("about:blank")) // Chromium keeps bob's page, fetches open, in its cache
		poll.Until(t, browserWait, "bob's stream closed on pagehide", func() bool { return fanout.Metric(t, "likes_fanout_viewers") == 1 })
		like(t, writer, http.MethodPost, "cats", "erin", 2) // while bob is away
		bob.back()                                          // restored from the cache, not reloaded
		bob.waitFor(`document.getElementById("connection")?.dataset.connects > `+connects, "bob's stream reopened")
		bob.waitState("live")
		bob.waitCount("cats", 2)
		if got := fanout.Metric(t, "likes_fanout_viewers"); got != 2 {
			t.Errorf("node holds %v viewers after bob came back; want 2", got)
		}
	})

	for _, p := range both {
		p.checkNoProblems()
	}
	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		for _, post := range strings.Split(browserPosts, ",") {
			alice.waitWatching(post, 2) // the picture shows "2 watching" under every count
		}
		alice.saveScreenshot(filepath.Join("..", "docs", "screenshot.png"))
	}
}

// TestBrowserPageWithToken checks the page's bearer-token path against a writer that requires
// JWTs (and serves no sessions): without a token the like shows at once, is refused with 401, and the page says so and
// takes the heart and the count back; with a pasted token the like is stored as the token's
// subject.
func TestBrowserPageWithToken(t *testing.T) {
	const secret = "e2e-browser-secret-at-least-32-bytes"
	browser := browsertest.Start(t)
	stack := startPageStack(t, "7", []string{"TRUST_USER_HEADER=false", "SESSIONS=false", "AUTH_JWT_SECRET=" + secret}, nil)
	writer, fanout := stack.writer, stack.fanout
	erin := openPage(t, browser, "erin", fanout.URL, 960, 640)
	erin.waitState("live")
	erin.waitCount("7", 0)

	erin.recordPost("7")
	erin.click("7")
	erin.waitNotice("refused")
	erin.waitPressed("7", false)
	// The heart and the count changed at once and were put back when the writer said 401.
	if got, want := strings.Join(erin.history("7"), " "), "false/0 true/1 false/0"; got != want {
		t.Errorf("post 7 showed %s; want %s (optimistic like, undone on 401)", got, want)
	}
	if got := storedCount(t, writer, "7"); got != 0 {
		t.Fatalf("writer stores %d likes of post 7 after a refused like; want 0", got)
	}

	token := signToken(t, secret, "erin")
	erin.do(
		chromedp.Click(chromedp.CSS(".identity summary")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
	)
	erin.waitFor(`document.getElementById("who").textContent.startsWith("bearer token")`, "the page to use the token")
	erin.click("7")
	erin.waitCount("7", 1)
	erin.waitPressed("7", true)

	// The like belongs to erin: the same token liking again changes nothing.
	status, body := bearerLike(t, writer, token, "7")
	if status != http.StatusOK || !strings.Contains(body, `"count":1`) || !strings.Contains(body, `"liked":false`) {
		t.Errorf("repeat like with erin's token = %d %s; want 200, count 1, liked false", status, body)
	}
	erin.checkNoProblems()
}

// signToken returns an HS256 JWT for user that expires in an hour.
func signToken(t *testing.T, secret, user string) string {
	t.Helper()
	return signTokenFor(t, secret, user, "")
}

// signTokenFor is signToken with an aud claim (none when aud is empty).
func signTokenFor(t *testing.T, secret, user, aud string) string {
	t.Helper()
	claims := jwt.MapClaims{"sub": user, "exp": time.Now().Add(time.Hour).Unix()}
	if aud != "" {
		claims["aud"] = aud
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return token
}

// bearerLike likes post with a bearer token and returns status and body.
func bearerLike(t *testing.T, writer *Proc, token, post string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, writer.URL+"/like/"+post, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /like/%s: %v", post, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// pageStack is what a page test runs against.
type pageStack struct {
	redis          *redistest.Server
	writer, fanout *Proc
}

// startPageStack starts Redis, a writer that allows exactly the page's origin (writerEnv added)
// and a fanout node that serves the page with posts (fanoutEnv added). The page's address is
// chosen first, so the writer's CORS_ORIGINS can name it, as a deployment would.
func startPageStack(t *testing.T, posts string, writerEnv, fanoutEnv []string) pageStack {
	t.Helper()
	redis := redistest.Start(t)
	pageAddr := freeport.Addr(t)
	writer := StartWriter(t, redis.URL, append([]string{"CORS_ORIGINS=http://" + pageAddr}, writerEnv...)...)
	fanout := startFanoutAt(t, pageAddr, redis.URL, append([]string{"WRITER_PUBLIC_URL=" + writer.URL, "PAGE_POSTS=" + posts}, fanoutEnv...)...)
	return pageStack{redis: redis, writer: writer, fanout: fanout}
}

// startFanoutAt starts fanout-svc on addr, chosen before the writer started.
func startFanoutAt(t *testing.T, addr, redisURL string, env ...string) *Proc {
	t.Helper()
	return StartProcAt(t, "fanout-svc", addr, append([]string{"REDIS_URL=" + redisURL, noViewerCap}, env...)...)
}

// like sends a like (POST) or unlike (DELETE) to the writer as user and checks the stored count.
func like(t *testing.T, writer *Proc, method, post, user string, wantCount int64) {
	t.Helper()
	status, body := doRequest(t, method, writer.URL+"/like/"+post, user)
	var reply struct{ Count int64 }
	if err := json.Unmarshal([]byte(body), &reply); status != http.StatusOK || err != nil || reply.Count != wantCount {
		t.Fatalf("%s /like/%s as %s = %d %s; want 200 with count %d", method, post, user, status, body, wantCount)
	}
}

// storedCount asks the writer for the count of post.
func storedCount(t *testing.T, writer *Proc, post string) int64 {
	t.Helper()
	status, body := doRequest(t, http.MethodGet, writer.URL+"/count/"+post, "")
	var reply struct{ Count int64 }
	if err := json.Unmarshal([]byte(body), &reply); status != http.StatusOK || err != nil {
		t.Fatalf("GET /count/%s = %d %s; want 200 with a count", post, status, body)
	}
	return reply.Count
}

func waitCounts(pages []*browserPage, post string, want int64) {
	for _, p := range pages {
		p.waitCount(post, want)
	}
}

// browserPage is one tab in its own browser context: its own storage, so its own user id.
type browserPage struct {
	t    *testing.T
	name string
	ctx  context.Context

	mu       sync.Mutex
	problems []string // uncaught exceptions and security (CSP, CORS) errors
	streams  []string // URLs of the stream requests the page sent, in order
}

// openPage opens url in a new isolated browser context with a width x height viewport.
func openPage(t *testing.T, browser context.Context, name, url string, width, height int64) *browserPage {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &browserPage{t: t, name: name, ctx: ctx}
	if err := chromedp.Listen(ctx, p.record); err != nil { // creates the tab, with no deadline
		t.Fatalf("%s: open tab: %v", name, err)
	}
	p.do(chromedp.EmulateViewport(width, height), chromedp.Navigate(url))
	return p
}

// record keeps the events that show the page misbehaving. It runs in chromedp's read loop, so
// it only appends.
func (p *browserPage) record(ev any) {
	var problem string
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if strings.Contains(ev.Request.URL, "/sse?") {
			p.mu.Lock()
			p.streams = append(p.streams, ev.Request.URL)
			p.mu.Unlock()
		}
	case *runtime.EventExceptionThrown:
		problem = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			problem += " " + ev.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if ev.Entry.Source == log.EntrySourceSecurity || strings.Contains(ev.Entry.Text, "Content Security Policy") ||
			strings.Contains(ev.Entry.Text, "CORS") {
			problem = string(ev.Entry.Source) + ": " + ev.Entry.Text
		}
	}
	if problem != "" {
		p.mu.Lock()
		p.problems = append(p.problems, problem)
		p.mu.Unlock()
	}
}

// streamRequests returns the URLs of the stream requests the page sent so far.
func (p *browserPage) streamRequests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.streams...)
}

func (p *browserPage) checkNoProblems() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		p.t.Errorf("%s: the page reported problems:\n%s", p.name, strings.Join(p.problems, "\n"))
	}
}

func (p *browserPage) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
}

// describe returns what the page shows, for failure messages.
func (p *browserPage) describe() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const c = document.getElementById("connection");
		const posts = [...document.querySelectorAll("li.post")].map((li) =>
			li.dataset.post + "=" + li.querySelector(".count-value").dataset.count +
			(li.querySelector(".like").getAttribute("aria-pressed") === "true" ? " (liked)" : ""));
		return "state " + c.dataset.state + ", connects " + c.dataset.connects + ", " + posts.join(", ");
	})()`))
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return s
}

// eval returns the value of a JavaScript expression in the page, as a string.
func (p *browserPage) eval(expr string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(`+expr+`)`))
	if err != nil {
		p.t.Fatalf("%s: evaluate %s: %v", p.name, expr, err)
	}
	return s
}

// back goes back in the page's history without waiting for a load event (chromedp.NavigateBack
// waits for one, and a page restored from the back/forward cache fires none). history.back()
// runs after the evaluation has answered: evaluated directly, the navigation could win the race
// and fail the evaluation with "Inspected target navigated or closed".
func (p *browserPage) back() {
	p.t.Helper()
	p.eval("void setTimeout(() => history.back())")
}

// recordPost starts keeping every state the post's heart and count show, as "pressed/count"
// (for example "true/3"), so a test can see an optimistic change that was undone a moment later.
// A MutationObserver runs in the page; each batch of changes adds one entry.
func (p *browserPage) recordPost(post string) {
	p.t.Helper()
	p.eval(fmt.Sprintf(`(() => {
		const li = document.querySelector('li[data-post=%q]');
		const state = () => li.querySelector(".like").getAttribute("aria-pressed") + "/" + li.querySelector(".count-value").dataset.count;
		const log = [state()];
		(window.likesHistory ||= {})[%q] = log;
		new MutationObserver(() => { if (log[log.length - 1] !== state()) log.push(state()); })
			.observe(li, { subtree: true, attributes: true, attributeFilter: ["aria-pressed", "data-count"] });
	})()`, post, post))
}

// history returns what the post showed since recordPost, oldest first.
func (p *browserPage) history(post string) []string {
	p.t.Helper()
	return strings.Split(p.eval(fmt.Sprintf(`window.likesHistory[%q].join(",")`, post)), ",")
}

// waitNotice waits for the notice to show text containing want.
func (p *browserPage) waitNotice(want string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`!document.getElementById("notice").hidden && document.getElementById("notice").textContent.includes(%q)`, want),
		fmt.Sprintf("a notice saying %q", want))
}

// clearNotice hides the notice, so waitNotice can tell a new one from the last.
func (p *browserPage) clearNotice() {
	p.t.Helper()
	p.eval(`(() => { const n = document.getElementById("notice"); n.hidden = true; n.textContent = ""; })()`)
}

// waitFor waits until the JavaScript expression is truthy in the page. It evaluates the
// expression again and again instead of using chromedp.Poll, whose in-page poll is bound to one
// JavaScript context and never returns once the page is restored from the back/forward cache.
func (p *browserPage) waitFor(expr, what string) {
	p.t.Helper()
	err := poll.For(browserWait, func() error {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`Boolean(`+expr+`)`))
		if err == nil && !ok {
			err = errors.New("not true")
		}
		return err
	})
	if err != nil {
		p.t.Fatalf("%s: waiting for %s: %v after %s; the page shows %s", p.name, what, err, browserWait, p.describe())
	}
}

func (p *browserPage) waitState(state string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`document.getElementById("connection")?.dataset.state === %q`, state), "state "+state)
}

func (p *browserPage) waitCount(post string, want int64) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`document.querySelector('li[data-post=%q] .count-value')?.dataset.count === "%d"`, post, want),
		fmt.Sprintf("post %s to show %d", post, want))
}

// waitPressed waits until the like button of post is settled (no request in flight, so the
// writer has answered and an optimistic change was kept or undone) and shows want.
func (p *browserPage) waitPressed(post string, want bool) {
	p.t.Helper()
	button := fmt.Sprintf(`document.querySelector('li[data-post=%q] .like')`, post)
	p.waitFor(fmt.Sprintf(`%s?.getAttribute("aria-pressed") === "%t" && %s.getAttribute("aria-busy") !== "true"`, button, want, button),
		fmt.Sprintf("like button of post %s settled with pressed=%t", post, want))
}

// click presses the like button of post with a real mouse event, once no request is in flight.
func (p *browserPage) click(post string) {
	p.t.Helper()
	button := fmt.Sprintf(`li[data-post=%q] .like`, post)
	p.waitFor(fmt.Sprintf(`document.querySelector('%s')?.getAttribute("aria-busy") !== "true"`, button), "like button idle")
	p.do(chromedp.Click(chromedp.CSS(button)))
}

func (p *browserPage) saveScreenshot(path string) {
	p.t.Helper()
	// Stop the count animation and fix the colour scheme, so the picture never catches a
	// transition and does not depend on the machine's theme.
	p.emulateMedia(map[string]string{"prefers-reduced-motion": "reduce", "prefers-color-scheme": "light"})
	p.capture(path)
}

// emulateMedia makes the page's media queries see features (name -> value), as a user's
// settings would.
func (p *browserPage) emulateMedia(features map[string]string) {
	p.t.Helper()
	var list []*emulation.MediaFeature
	for name, value := range features {
		list = append(list, &emulation.MediaFeature{Name: name, Value: value})
	}
	p.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: list})
		return err
	}))
}

// capture writes a screenshot of the page as it is to path.
func (p *browserPage) capture(path string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("%s: screenshot: %v", p.name, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("write screenshot: %v", err)
	}
	p.t.Logf("wrote %s (%d bytes)", path, len(png))
}

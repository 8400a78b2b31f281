package e2e

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestBrowserSameUserSameHearts opens the page as one user (PAGE_TOKEN, a JWT the writer checks)
// in two isolated browser contexts, which share no storage: the hearts come from the writer's
// GET /likes, so both show the same ones, including a like made before either page opened and
// one made on the other "device".
func TestBrowserSameUserSameHearts(t *testing.T) {
	const secret = "e2e-hearts-secret-at-least-32-bytes!"
	browser := browsertest.Start(t)
	token := signToken(t, secret, "frank")
	stack := startPageStack(t, browserPosts, []string{"TRUST_USER_HEADER=false", "AUTH_JWT_SECRET=" + secret}, []string{"PAGE_TOKEN=" + token})
	writer, fanout := stack.writer, stack.fanout
	if status, body := bearerLike(t, writer, token, "cats"); status != http.StatusOK {
		t.Fatalf("frank likes cats: %d %s", status, body)
	}
	if status, body := bearerLike(t, writer, signToken(t, secret, "someone-else"), "42"); status != http.StatusOK {
		t.Fatalf("someone else likes 42: %d %s", status, body)
	}

	phone := openPage(t, browser, "phone", fanout.URL, 390, 844)
	phone.waitState("live")
	phone.waitPressed("cats", true) // liked before this page existed
	phone.waitPressed("42", false)  // liked by someone else only
	phone.waitCount("42", 1)
	phone.click("42")
	phone.waitPressed("42", true)

	laptop := openPage(t, browser, "laptop", fanout.URL, 960, 640)
	laptop.waitState("live")
	for _, p := range []*browserPage{phone, laptop} {
		p.waitPressed("cats", true)
		p.waitPressed("42", true)
		p.waitPressed("launch-day", false)
		p.waitCount("42", 2)
		p.waitCount("cats", 1)
	}

	laptop.click("cats") // unlike on the second device
	laptop.waitPressed("cats", false)
	phone.do(chromedp.Reload())
	phone.waitState("live")
	phone.waitPressed("cats", false)
	phone.waitPressed("42", true)
	phone.waitCount("cats", 0)

	for _, p := range []*browserPage{phone, laptop} {
		if keys := p.eval(`Object.keys(localStorage).filter((k) => /like/i.test(k)).join(",")`); keys != "" {
			t.Errorf("%s keeps %q in localStorage; want no liked state there", p.name, keys)
		}
		p.checkNoProblems()
	}
}

// TestBrowserLikeUndoneWhenRefused likes through the page against a writer with a per-user rate
// limit and then without Redis: each refused like shows at once and is undone; after a 429 the
// library sends nothing until Retry-After has passed, then the like goes through.
func TestBrowserLikeUndoneWhenRefused(t *testing.T) {
	const window = 3 * time.Second
	browser := browsertest.Start(t)
	stack := startPageStack(t, browserPosts, []string{"LIKE_RATE=1/" + window.String(), "REQUEST_TIMEOUT=1s", "REDIS_TIMEOUT=500ms"}, nil)
	redis, writer := stack.redis, stack.writer
	page := openPage(t, browser, "gina", stack.fanout.URL, 960, 640)
	page.waitState("live")
	page.waitCount("launch-day", 0)
	var likedAt time.Time // gina's last like: her bucket is empty for the window after it

	t.Run("429 undone, Retry-After honoured", func(t *testing.T) {
		page.click("42") // the one like of this window
		page.waitPressed("42", true)
		page.recordPost("launch-day")
		page.click("launch-day")
		page.waitNotice("Too many likes")
		refusedAt := time.Now()
		page.waitPressed("launch-day", false)
		if got, want := strings.Join(page.history("launch-day"), " "), "false/0 true/1 false/0"; got != want {
			t.Errorf("launch-day showed %s; want %s (optimistic like, undone on 429)", got, want)
		}
		if got := writer.Metric(t, "likes_writer_rate_limited_total"); got != 1 {
			t.Fatalf("writer refused %v likes; want 1", got)
		}

		// Until Retry-After has passed every click is refused in the page, without a request.
		for attempt := 0; ; attempt++ {
			page.clearNotice()
			page.click("launch-day")
			if page.eval(`document.querySelector('li[data-post="launch-day"] .like').getAttribute("aria-pressed")`) == "true" {
				page.waitPressed("launch-day", true)
				break
			}
			page.waitNotice("Too many likes")
			if time.Since(refusedAt) > window+5*time.Second {
				t.Fatalf("still refused %s after the 429 (%d clicks); the window is %s", time.Since(refusedAt), attempt, window)
			}
			time.Sleep(200 * time.Millisecond) // a user clicking again
		}
		likedAt = time.Now()
		waited := time.Since(refusedAt)
		if got := writer.Metric(t, "likes_writer_rate_limited_total"); got != 1 {
			t.Errorf("writer refused %v likes; want 1: the page sent likes before Retry-After passed", got)
		}
		if waited < time.Second {
			t.Errorf("the like went through %s after the 429; want no sooner than Retry-After (at least 1s)", waited)
		}
		t.Logf("like accepted %s after the 429 (window %s)", waited.Round(10*time.Millisecond), window)
		page.waitCount("launch-day", 1)
		if got := storedCount(t, writer, "launch-day"); got != 1 {
			t.Errorf("writer stores %d likes of launch-day; want 1", got)
		}
	})

	t.Run("503 undone while Redis is down", func(t *testing.T) {
		// Within the window of gina's last like the writer knows her bucket is empty without
		// asking Redis, and answers 429 (rightly): this case is about Redis being down, so it
		// waits the window out (a schedule, not a guess).
		time.Sleep(time.Until(likedAt.Add(window)))
		page.recordPost("cats")
		redis.Kill()
		page.click("cats")
		page.waitNotice("unavailable")
		page.waitPressed("cats", false)
		if got, want := strings.Join(page.history("cats"), " "), "false/0 true/1 false/0"; got != want {
			t.Errorf("cats showed %s; want %s (optimistic like, undone on 503)", got, want)
		}
		redis.Restart() // empty: no persistence
		poll.Until(t, 15*time.Second, "a like of cats accepted once Redis is back", func() bool {
			page.click("cats")
			return page.eval(`document.querySelector('li[data-post="cats"] .like').getAttribute("aria-pressed")`) == "true"
		})
		page.waitPressed("cats", true)
		if got := storedCount(t, writer, "cats"); got != 1 {
			t.Errorf("writer stores %d likes of cats; want 1 (none from while Redis was down)", got)
		}
	})
	page.checkNoProblems()
}

// TestBrowserSilenceWatchdog freezes (SIGSTOP) the fanout node that holds the page's stream,
// behind haproxy: the socket stays open and silent, as with a node cut off from the network, so
// neither the browser nor the balancer's open tunnel notices. The library's watchdog does,
// within three heartbeat intervals, and the page reconnects through haproxy to the other node and
// shows a like made meanwhile.
func TestBrowserSilenceWatchdog(t *testing.T) {
	const heartbeat = time.Second
	browser := browsertest.Start(t)
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL, "CORS_ORIGINS=*")
	env := []string{"WRITER_PUBLIC_URL=" + writer.URL, "PAGE_POSTS=" + browserPosts,
		"HEARTBEAT_INTERVAL=" + heartbeat.String(), "SSE_RETRY=500ms"}
	nodes := []*Proc{StartFanout(t, redis.URL, env...), StartFanout(t, redis.URL, env...)}
	lb := StartHaproxy(t, nodes[0].Addr, nodes[1].Addr)
	page := openPage(t, browser, "hana", lb.URL, 960, 640)
	page.waitState("live")
	page.waitCount("42", 0)

	var frozen, other *Proc
	poll.Until(t, 10*time.Second, "the page's one stream on one of the two nodes", func() bool {
		a, b := nodes[0].Metric(t, "likes_fanout_viewers"), nodes[1].Metric(t, "likes_fanout_viewers")
		switch {
		case a == 1 && b == 0:
			frozen, other = nodes[0], nodes[1]
		case a == 0 && b == 1:
			frozen, other = nodes[1], nodes[0]
		}
		return frozen != nil
	})
	frozen.Signal(t, syscall.SIGSTOP)
	stoppedAt := time.Now()
	t.Cleanup(func() { frozen.Signal(t, syscall.SIGCONT) }) // runs before the process is stopped

	like(t, writer, http.MethodPost, "42", "ida", 1) // the frozen node never delivers it
	page.waitState("reconnecting")
	noticed := time.Since(stoppedAt)
	page.waitFor(`document.getElementById("connection").dataset.connects >= 2`, "a second connection")
	page.waitState("live")
	page.waitCount("42", 1)
	healed := time.Since(stoppedAt)
	if got := other.Metric(t, "likes_fanout_viewers"); got != 1 {
		t.Errorf("the node left running holds %v viewers; want the page's stream", got)
	}
	t.Logf("silence noticed after %s, page live on the other node with the missed like after %s (heartbeat %s)",
		noticed.Round(10*time.Millisecond), healed.Round(10*time.Millisecond), heartbeat)
	// The watchdog waits three heartbeat intervals; a margin covers a loaded machine.
	if limit := 3*heartbeat + 2*time.Second; noticed > limit {
		t.Errorf("silence noticed after %s; want within %s (three heartbeats and a margin)", noticed, limit)
	}
	if limit := 3*heartbeat + 5*time.Second; healed > limit {
		t.Errorf("page live again after %s; want within %s", healed, limit)
	}
	page.checkNoProblems()
}

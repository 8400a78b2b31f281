package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/likes/likes/testkit/browsertest"
)

// reactionPosts are the reaction tests' posts: "talk" is talk mode's, "42" a post of the feed.
const reactionPosts = "talk,42"

// TestBrowserReactions drives <like-button> and <reaction-bar> on the bundled page in two
// browser contexts (two users): a click and the keyboard react and like, both pages count it,
// and a reaction from the other context floats its emoji up. A second reaction inside
// REACTION_INTERVAL is refused with the wait shown and the buttons disabled until it passed. A
// third page that asks for reduced motion counts every reaction and floats none. Set
// UPDATE_SCREENSHOT=1 to rewrite docs/reactions.png.
func TestBrowserReactions(t *testing.T) {
	browser := browsertest.Start(t)
	stack := startPageStack(t, reactionPosts, []string{"REACTION_INTERVAL=5s"}, nil)
	ann := openPage(t, browser, "ann", stack.fanout.URL, 960, 720)
	ben := openPage(t, browser, "ben", stack.fanout.URL, 960, 720)
	both := []*browserPage{ann, ben}
	for _, p := range both {
		p.waitState("live")
		p.waitCount("42", 0)
		p.waitReactions("42", "clap", 0)
		p.watchFloats("42")
	}

	t.Run("a click reacts and floats on every page", func(t *testing.T) {
		ann.clickReaction("42", "clap")
		waitReactionCounts(both, "42", "clap", 1)
		ben.waitFloats("42", "clap", 1) // a reaction from another context
		ann.waitFloats("42", "clap", 1) // the user's own, at once
		if got := ann.eval(`document.querySelector('reaction-bar[post="42"] .reaction[data-kind="clap"]').getAttribute("aria-label")`); got != "Clap, 1 reaction" {
			t.Errorf("clap button label = %q; want %q", got, "Clap, 1 reaction")
		}
	})

	t.Run("the keyboard likes and reacts", func(t *testing.T) {
		like := `li[data-post="42"] like-button .like`
		ben.do(chromedp.Focus(chromedp.CSS(like)), chromedp.KeyEvent(" "))
		waitCounts(both, "42", 1)
		ben.waitPressed("42", true)
		ann.waitPressed("42", false)
		if got := ben.eval(`document.querySelector('` + like + `').getAttribute("aria-label")`); got != "Like, 1 like" {
			t.Errorf("like button label = %q; want %q", got, "Like, 1 like")
		}
		ben.do(chromedp.Focus(chromedp.CSS(like)), chromedp.KeyEvent("\r")) // Enter: unlike
		waitCounts(both, "42", 0)
		ben.waitPressed("42", false)

		ben.do(chromedp.Focus(chromedp.CSS(reactionButton("42", "heart"))), chromedp.KeyEvent("\r"))
		waitReactionCounts(both, "42", "heart", 1)
		ann.waitFloats("42", "heart", 1)
	})

	t.Run("one reaction per interval: refused, then taken", func(t *testing.T) {
		ben.clearNotice()
		ben.clickReaction("42", "fire") // within 5 s of ben's heart
		ben.waitNotice("One reaction at a time")
		ben.waitFor(`document.querySelector('`+reactionButton("42", "fire")+`').getAttribute("aria-disabled") === "true"`, "the buttons disabled")
		if got := ben.eval(`document.querySelector('` + reactionButton("42", "fire") + ` .reaction-count').dataset.count`); got != "0" {
			t.Errorf("a refused fire shows %s; want 0 (the optimistic one undone)", got)
		}
		// The page enables the buttons when the writer's wait has passed, and the next click counts.
		ben.waitFor(`document.querySelector('`+reactionButton("42", "fire")+`').getAttribute("aria-disabled") === "false"`, "the buttons enabled again")
		ben.clickReaction("42", "fire")
		waitReactionCounts(both, "42", "fire", 1)
	})

	t.Run("reduced motion: counts, no floating emoji", func(t *testing.T) {
		cara := openPage(t, browser, "cara", stack.fanout.URL, 960, 720)
		cara.emulateMedia(map[string]string{"prefers-reduced-motion": "reduce"})
		cara.waitState("live")
		cara.waitReactions("42", "fire", 1)
		cara.watchFloats("42")
		before := ann.floats("42", "wow")
		react(t, stack.writer, "42", "wow", "dan")
		ann.waitFloats("42", "wow", before+1) // motion on: floated
		cara.waitReactions("42", "wow", 1)
		if got := cara.floats("42", "wow"); got != 0 {
			t.Errorf("cara, who asked for reduced motion, floated %d emoji; want none", got)
		}
		cara.checkNoProblems()
	})

	for _, p := range both {
		p.checkNoProblems()
	}
	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		ann.saveScreenshot(filepath.Join("..", "docs", "reactions.png"))
	}
}

// TestBrowserTalkMode opens the page in talk mode (?mode=talk) as a presenter's screen and as
// one of the audience on a phone: the audience's reaction and a crowd's, sent to the writer,
// reach the screen's counts and total and float up there. Set UPDATE_SCREENSHOT=1 to rewrite
// docs/talk-mode.png with the emoji in flight.
func TestBrowserTalkMode(t *testing.T) {
	browser := browsertest.Start(t)
	stack := startPageStack(t, reactionPosts, nil, nil)
	screen := openPage(t, browser, "screen", stack.fanout.URL+"/?mode=talk", 1280, 800)
	phone := openPage(t, browser, "phone", stack.fanout.URL+"/?mode=talk", 390, 844)
	for _, p := range []*browserPage{screen, phone} {
		p.waitState("live")
		p.waitFor(`!document.getElementById("talk").hidden && document.getElementById("posts").hidden`, "talk mode")
		p.waitReactions("talk", "clap", 0)
	}
	screen.watchFloats("talk")

	phone.clickReaction("talk", "clap")
	screen.waitReactions("talk", "clap", 1)
	screen.waitFloats("talk", "clap", 1)

	kinds := []string{"heart", "clap", "laugh", "wow", "fire"}
	for i := range 9 {
		react(t, stack.writer, "talk", kinds[i%len(kinds)], "crowd-"+strconv.Itoa(i))
	}
	screen.waitFor(`document.getElementById("talk-total").dataset.total === "10"`, "a total of 10 reactions")
	screen.waitReactions("talk", "clap", 3)
	screen.waitFloats("talk", "fire", 1)
	for _, p := range []*browserPage{screen, phone} {
		p.checkNoProblems()
	}

	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		screen.emulateMedia(map[string]string{"prefers-color-scheme": "light"})
		screen.waitFor(`document.getElementById("talk-watching").dataset.watching === "2"`, "2 watching")
		for i := range 10 {
			react(t, stack.writer, "talk", kinds[i%len(kinds)], "shot-"+strconv.Itoa(i))
		}
		screen.waitFor(`document.querySelectorAll("#talk-bar .reaction-float").length >= 6`, "emoji in flight")
		// Hold every emoji where it is, so the picture shows them on their way up.
		screen.eval(`document.getAnimations().forEach((a, i) => { a.pause(); a.currentTime = 300 + (i * 97) % 900; })`)
		screen.capture(filepath.Join("..", "docs", "talk-mode.png"))
	}
}

// react sends one reaction of kind to post as user, straight to the writer.
func react(t *testing.T, writer *Proc, post, kind, user string) {
	t.Helper()
	if status, body := doRequest(t, http.MethodPost, writer.URL+"/react/"+post+"/"+kind, user); status != http.StatusOK {
		t.Fatalf("POST /react/%s/%s as %s = %d %s; want 200", post, kind, user, status, body)
	}
}

func reactionButton(post, kind string) string {
	return fmt.Sprintf(`reaction-bar[post=%q] .reaction[data-kind=%q]`, post, kind)
}

func waitReactionCounts(pages []*browserPage, post, kind string, want int) {
	for _, p := range pages {
		p.waitReactions(post, kind, want)
	}
}

// waitReactions waits until the reaction bar of post shows want reactions of kind.
func (p *browserPage) waitReactions(post, kind string, want int) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`document.querySelector('%s .reaction-count')?.dataset.count === "%d"`, reactionButton(post, kind), want),
		fmt.Sprintf("post %s to show %d %s", post, want, kind))
}

// clickReaction presses the button of kind in the reaction bar of post with a real mouse event.
func (p *browserPage) clickReaction(post, kind string) {
	p.t.Helper()
	p.do(chromedp.Click(chromedp.CSS(reactionButton(post, kind))))
}

// watchFloats starts counting, by kind, the emoji the reaction bar of post floats from now on.
// A MutationObserver runs in the page: an emoji lives for a second or two, so the test counts
// them as they are added instead of looking for them later.
func (p *browserPage) watchFloats(post string) {
	p.t.Helper()
	p.eval(fmt.Sprintf(`(() => {
		const bar = document.querySelector('reaction-bar[post=%q]');
		const counts = ((window.likesFloats ||= {})[%q] = {});
		new MutationObserver((records) => {
			for (const r of records) for (const n of r.addedNodes) {
				if (n.classList && n.classList.contains("reaction-float")) counts[n.dataset.kind] = (counts[n.dataset.kind] || 0) + 1;
			}
		}).observe(bar, { subtree: true, childList: true });
	})()`, post, post))
}

// floats returns how many emoji of kind the bar of post floated since watchFloats.
func (p *browserPage) floats(post, kind string) int {
	p.t.Helper()
	n, err := strconv.Atoi(p.eval(fmt.Sprintf(`window.likesFloats[%q][%q] || 0`, post, kind)))
	if err != nil {
		p.t.Fatalf("%s: floats: %v", p.name, err)
	}
	return n
}

// waitFloats waits until the bar of post floated at least want emoji of kind.
func (p *browserPage) waitFloats(post, kind string, want int) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`(window.likesFloats[%q][%q] || 0) >= %d`, post, kind, want),
		fmt.Sprintf("%d floating %s on post %s", want, kind, post))
}

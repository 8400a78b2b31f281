package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/likes/likes/testkit/browsertest"
	"github.com/likes/likes/testkit/poll"
)

// TestBrowserAfterTheTalk opens the page after the talk (?mode=after) for the talk's post, from
// the fanout node's origin: it reads the writer's timeline across origins and charts the likes and
// reactions sent to the writer, with the busiest second among its peaks. Set UPDATE_SCREENSHOT=1
// to rewrite docs/after-the-talk.png, from reactions sent over ten seconds.
func TestBrowserAfterTheTalk(t *testing.T) {
	browser := browsertest.Start(t)
	stack := startPageStack(t, reactionPosts, nil, nil)
	kinds := []string{"heart", "clap", "laugh", "wow", "fire"}
	sent := 0
	send := func(wave, likes, reactions int) {
		for i := range likes {
			user := "fan-" + strconv.Itoa(wave) + "-" + strconv.Itoa(i)
			if status, body := doRequest(t, http.MethodPost, stack.writer.URL+"/like/talk", user); status != http.StatusOK {
				t.Fatalf("like as %s: %d %s", user, status, body)
			}
		}
		for i := range reactions {
			react(t, stack.writer, "talk", kinds[(wave+i)%len(kinds)], "crowd-"+strconv.Itoa(wave)+"-"+strconv.Itoa(i))
		}
		sent += likes + reactions
	}
	from := time.Now().Unix() - 5
	waves := 1
	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		waves = 10 // a wave a second, so that the chart has a shape
	}
	for w := range waves {
		second := time.Now().Unix()
		send(w, 2+w%3, 3+(w*7)%11)
		poll.Until(t, 2*time.Second, "the next second", func() bool { return time.Now().Unix() > second })
	}
	url := stack.fanout.URL + "/?mode=after&post=talk&from=" + strconv.FormatInt(from, 10) + "&to=" + strconv.FormatInt(from+60, 10) + "&step=1"
	page := openPage(t, browser, "after", url, 1280, 800)
	page.waitFor(`!document.getElementById("after").hidden && document.getElementById("posts").hidden`, "the after-the-talk view")
	page.waitFor(`document.getElementById("after-total").dataset.total === "`+strconv.Itoa(sent)+`"`, strconv.Itoa(sent)+" likes and reactions charted")
	if n := page.eval(`String(document.querySelectorAll("#after-chart rect").length)`); n == "0" {
		t.Error("the chart has no bars")
	}
	if n := page.eval(`String(document.querySelectorAll("#after-peaks li").length)`); n == "0" {
		t.Error("no peaks listed")
	}
	if href := page.eval(`document.getElementById("after-csv").href`); href == "" || href == "#" {
		t.Errorf("CSV link %q; want the timeline's CSV", href)
	}
	page.checkNoProblems()
	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		page.emulateMedia(map[string]string{"prefers-color-scheme": "light"})
		page.capture(filepath.Join("..", "docs", "after-the-talk.png"))
	}
}

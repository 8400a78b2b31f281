package browsertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any of them leaves a goroutine running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestStartRunsScripts: the browser Start returns loads a page and runs its script.
func TestStartRunsScripts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><title>t</title><p id="p"></p><script>document.getElementById("p").textContent = "ran";</script>`))
	}))
	defer srv.Close()
	browser := Start(t)
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, 20*time.Second)
	defer stop()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("p").textContent`))
	if err != nil || text != "ran" {
		t.Errorf("page text %q, %v; want \"ran\"", text, err)
	}
}

// Package browsertest starts the headless Chromium that tests drive with chromedp: the e2e
// suite's live-page tests and the Docker suite's check of the page served through haproxy.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Start starts headless Debian chromium with a fresh profile; it stops when the test ends.
// Without chromium the test is skipped on a workstation but fails in CI (CI set), where .ci/run
// installs it.
func Start(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" {
			t.Fatalf("chromium not found on PATH; CI must have it (apt-get install -y chromium): %v", err)
		}
		t.Skipf("chromium not found on PATH (apt-get install -y chromium); skipping the browser test outside CI")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline on its life
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

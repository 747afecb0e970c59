// Package browsertest starts a real headless Chromium for browser tests,
// driven with chromedp.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// RequireEnv is the environment variable that turns a missing Chromium into
// a test failure; .ci/run sets it, so CI never skips the browser tests.
const RequireEnv = "CODEMOJEX_REQUIRE_BROWSER"

// Path returns the Chromium binary, or "" when none is installed.
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// MustStart starts a headless Chromium with a fresh profile and returns a
// browser context (its first tab). The browser is closed when the test
// ends. Without Chromium the test fails when RequireEnv is set and is
// skipped otherwise.
func MustStart(tb testing.TB) context.Context {
	tb.Helper()
	path := Path()
	if path == "" {
		if os.Getenv(RequireEnv) != "" {
			tb.Fatalf("browsertest: chromium not found and %s is set: apt-get install -y chromium", RequireEnv)
		}
		tb.Skipf("browsertest: chromium not found (apt-get install -y chromium); set %s=1 to make this a failure", RequireEnv)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// The first Run starts the browser; it must not carry a timeout, or the
	// browser dies with it.
	if _, err := chromedp.Run(bctx, chromedp.Navigate("about:blank")); err != nil {
		cancelBrowser()
		cancelAlloc()
		tb.Fatalf("browsertest: start chromium: %v", err)
	}
	tb.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

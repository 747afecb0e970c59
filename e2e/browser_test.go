package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/browsertest"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// timelineIDs reads the ids of the page's timeline lines, top to bottom.
func timelineIDs(tb testing.TB, ctx context.Context) []string {
	tb.Helper()
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#timeline > li')).map(li => li.id)`))
	if err != nil {
		tb.Fatalf("read timeline: %v", err)
	}
	return ids
}

// waitTimeline waits until the page shows exactly want, top to bottom.
func waitTimeline(tb testing.TB, ctx context.Context, want []string, timeout time.Duration) {
	tb.Helper()
	var got []string
	wait.Until(tb, timeout, func() bool {
		got = timelineIDs(tb, ctx)
		return equal(got, want)
	}, func() string { return fmt.Sprintf("timeline to show %s (shows %s)", describe(want), describe(got)) })
}

func connState(tb testing.TB, ctx context.Context) string {
	tb.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`(document.getElementById('conn') || {dataset: {}}).dataset.state || ''`))
	if err != nil {
		tb.Fatalf("read connection state: %v", err)
	}
	return s
}

func waitConn(tb testing.TB, ctx context.Context, want string, timeout time.Duration) {
	tb.Helper()
	proctest.WaitFor(tb, timeout, func() bool { return connState(tb, ctx) == want },
		"connection state %q (is %q)", want, connState(tb, ctx))
}

func open(tb testing.TB, ctx context.Context, url string) {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("#timeline"))); err != nil {
		tb.Fatalf("open %s: %v", url, err)
	}
}

// TestBrowserLiveTimeline: a game page shows new events live, newest first,
// without a reload (issue 2).
func TestBrowserLiveTimeline(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("live")
	w.add(w.mint(), "game_started", "title", "Live", "rounds", "3", "code_length", "4", "palette", "🍎🍌🍇🍒🥝🍑🍍🥥")
	c.waitStored("live", w.ids, 10*time.Second)

	ctx := browsertest.MustStart(t)
	open(t, ctx, r.url("/games/live"))
	waitTimeline(t, ctx, reversed(w.ids), 5*time.Second)
	waitConn(t, ctx, "live", 5*time.Second)
	// Mark the document: a reload would lose the mark.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__mark = 42`)); err != nil {
		t.Fatal(err)
	}
	w.add(w.mint(), "player_joined", "player", "ada", "avatar", "🦊")
	for i := 0; i < 8; i++ {
		w.chat("ada", fmt.Sprintf("line %d", i))
	}
	waitTimeline(t, ctx, reversed(w.ids), 10*time.Second)
	mark, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__mark || 0`))
	if err != nil || mark != 42 {
		t.Fatalf("page was reloaded (mark=%d, err=%v)", mark, err)
	}
}

// TestBrowserOrderAndDedupe: an event with an older EVT id that arrives
// after newer ones (a re-claim) lands at its sorted place, once; a duplicate
// delivery adds no line (issue 5, proofs 1 and 2).
func TestBrowserOrderAndDedupe(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("order")
	late := w.mint() // minted first, written last
	w.chat("ada", "first")
	ctx := browsertest.MustStart(t)
	open(t, ctx, r.url("/games/order"))
	waitConn(t, ctx, "live", 5*time.Second)
	w.chat("bob", "second")
	w.chat("ada", "third")
	c.waitStored("order", w.ids, 10*time.Second)
	waitTimeline(t, ctx, reversed(w.ids), 5*time.Second)

	w.add(late, "chat", "player", "cy", "text", "late but first")
	dup := w.ids[1]
	w.add(dup, "chat", "player", "bob", "text", "second") // same EVT id again
	all := dedupe(sortedCopy(w.ids))
	c.waitStored("order", all, 10*time.Second)
	waitTimeline(t, ctx, reversed(all), 5*time.Second)
	if got := timelineIDs(t, ctx); got[len(got)-1] != late {
		t.Fatalf("late event is not at the bottom (oldest): %v", got)
	}
}

// TestBrowserReconnect: the page's replica is SIGKILLed and restarted while
// events keep coming; the page shows reconnecting, resumes, and ends equal
// to the store's timeline (issue 5, proof 3).
func TestBrowserReconnect(t *testing.T) {
	c := newCluster(t)
	r1 := c.start("r1")
	c.start("r2") // keeps consuming while r1 is down
	w := c.writer("reconnect")
	w.chat("ada", "hello")
	c.waitStored("reconnect", w.ids, 10*time.Second)

	ctx := browsertest.MustStart(t)
	open(t, ctx, r1.url("/games/reconnect"))
	waitConn(t, ctx, "live", 5*time.Second)

	all := crashWhileWriting(t, ctx, c, r1, w, func() { waitConn(t, ctx, "live", 30*time.Second) })
	c.waitStored("reconnect", all, 20*time.Second)
	waitTimeline(t, ctx, reversed(sortedCopy(all)), 10*time.Second)
}

// crashWhileWriting SIGKILLs r, the replica of the page in ctx, while w
// keeps writing; waits for the page to say it is reconnecting; restarts r;
// waits for live (the page live again); and returns every id w wrote.
func crashWhileWriting(t *testing.T, ctx context.Context, c *cluster, r *renderer, w *writer, live func()) []string {
	t.Helper()
	var stop atomic.Bool
	done := make(chan struct{})
	ids := make(chan []string, 1)
	go func() { // the writer keeps writing through the crash
		defer close(done)
		// At most 450 lines: the page keeps 500 in its DOM (web's DOMLines),
		// and the tests compare the whole timeline. A restart waits up to
		// 7 s for the killed process's lease, so 30 ms pacing still writes
		// through all of it.
		for i := 0; !stop.Load() && i < 450; i++ {
			w.chat("bob", fmt.Sprintf("msg %d", i))
			time.Sleep(30 * time.Millisecond) // pacing of the writer, not synchronisation
		}
		ids <- w.ids
	}()
	r.Kill()
	waitConn(t, ctx, "reconnecting", 10*time.Second)
	c.restart(r)
	live()
	stop.Store(true)
	<-done
	return <-ids
}

// TestBrowserCrossReplica: a browser on replica A sees lines that replica B
// rendered within about a second, even when A ignores the doorbell (issue 5,
// proof 4).
func TestBrowserCrossReplica(t *testing.T) {
	c := newCluster(t)
	a := c.start("a", "-consume=false", "-doorbell=false")
	c.start("b")
	w := c.writer("cross")
	w.chat("ada", "hello")
	c.waitStored("cross", w.ids, 10*time.Second)
	ctx := browsertest.MustStart(t)
	open(t, ctx, a.url("/games/cross"))
	waitConn(t, ctx, "live", 5*time.Second)
	// The second is timed on a plain websocket to A beside the page: the
	// browser's rendering and the test's polls of it, slower on a loaded
	// host, are not the tailer's to answer for.
	ws := mustDial(t, a, "cross", 0)
	for i := 0; i < 3; i++ {
		w.chat("bob", fmt.Sprintf("from b %d", i))
		c.waitStored("cross", w.ids, 10*time.Second)
		// The tailer polls at least every second: 1.5 s is that plus slack.
		if err := ws.readUntil(w.ids, 1500*time.Millisecond); err != nil {
			t.Fatalf("line %d of B's not on A's socket within 1.5 s of its commit: %v", i, err)
		}
		waitTimeline(t, ctx, reversed(w.ids), 10*time.Second)
	}
}

// TestBrowserHostileTextInert: hostile chat text renders as text in a real
// browser: no dialog, no injected element; and the CSP header is set
// (issue 5, proof 7).
func TestBrowserHostileTextInert(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("hostile")
	w.chat("ada", "hi")
	c.waitStored("hostile", w.ids, 10*time.Second)

	resp, err := http.Get(r.url("/games/hostile"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("Content-Security-Policy = %q", csp)
	}

	ctx := browsertest.MustStart(t)
	var dialogs atomic.Int32
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	open(t, ctx, r.url("/games/hostile"))
	waitConn(t, ctx, "live", 5*time.Second)
	hostile := []string{
		`<script>alert(1)</script>`,
		`<img src=x onerror="alert(2)">`,
		`"onmouseover="alert(3)`,
		`<a href="javascript:alert(4)">click</a>`,
		"\u202Eevil\u202C <svg onload=alert(5)>",
	}
	for _, h := range hostile {
		w.add(w.mint(), "player_joined", "player", h[:min(len(h), 60)], "avatar", "🦊")
		w.chat("mallory", h)
	}
	c.waitStored("hostile", w.ids, 10*time.Second)
	waitTimeline(t, ctx, reversed(w.ids), 5*time.Second)
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`document.querySelectorAll('#timeline script, #timeline img, #timeline svg, #timeline a[href^="javascript"], #timeline [onmouseover], #timeline [onerror]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if injected != 0 {
		t.Fatalf("%d injected elements in the timeline", injected)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('timeline').innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "<script>alert(1)</script>") {
		t.Fatalf("hostile text is not shown as text: %q", text[:min(len(text), 500)])
	}
	if n := dialogs.Load(); n != 0 {
		t.Fatalf("%d dialogs opened", n)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sortStrings(out)
	return out
}

package web_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/browsertest"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// browser is a headless Chromium tab that records script errors and CSP
// violations (they reach the console log).
type browser struct {
	tb       testing.TB
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	failing  []string // URL parts whose network failures the test causes
}

// allowFailing tells b that requests whose URL holds part are made to fail
// by the test: their network errors and error statuses in the console are
// no problem.
func (b *browser) allowFailing(part string) {
	b.mu.Lock()
	b.failing = append(b.failing, part)
	b.mu.Unlock()
}

func mustOpenBrowser(tb testing.TB) *browser {
	tb.Helper()
	b := &browser{tb: tb, ctx: browsertest.MustStart(tb)}
	err := chromedp.Listen(b.ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == "error" {
				b.problems = append(b.problems, "console error")
			}
		case *log.EventEntryAdded:
			// A refused websocket while a replica restarts is expected.
			if strings.HasPrefix(ev.Entry.Text, "WebSocket connection to") {
				return
			}
			// So is an event stream cut or refused (the fallback's), and
			// the page's /healthz while the server is down.
			if (strings.Contains(ev.Entry.URL, "/events?") || strings.HasSuffix(ev.Entry.URL, "/healthz")) && strings.Contains(ev.Entry.Text, "net::ERR_") {
				return
			}
			for _, part := range b.failing {
				if strings.Contains(ev.Entry.URL, part) && (strings.Contains(ev.Entry.Text, "net::ERR_") || strings.Contains(ev.Entry.Text, "the server responded with a status of")) {
					return
				}
			}
			if ev.Entry.Level == log.EntryLevelError || strings.Contains(ev.Entry.Text, "Content Security Policy") {
				b.problems = append(b.problems, "log: "+ev.Entry.Text)
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.tb.Fatal(err)
	}
}

// until polls a JavaScript condition in the page.
func (b *browser) until(what, js string) {
	b.tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(20*time.Millisecond)))
		if err == nil {
			return
		}
		// Right after a navigation the old page's JavaScript context may
		// be gone before the new one is known, and a page that navigates
		// itself (a reload) ends the poll: ask again.
		if ctx.Err() == nil && (strings.Contains(err.Error(), "Cannot find context") || strings.Contains(err.Error(), "Inspected target navigated or closed")) {
			continue
		}
		b.tb.Fatalf("waiting for %s: %v", what, err)
	}
}

func (b *browser) eval(js string) []string {
	b.tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
	if err != nil {
		b.tb.Fatal(err)
	}
	return v
}

// showsOnce waits for the page to show evs, each once and in order, live
// again and without a reload since window.__mark was set.
func (b *browser) showsOnce(evs []store.Event) {
	b.tb.Helper()
	b.until("every line", `document.querySelectorAll('#timeline > li').length === `+strconv.Itoa(len(evs)))
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		b.tb.Fatalf("timeline %v, want %v", got, want)
	}
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live'`)
	if n := b.num(`window.__mark || 0`); n != 1 {
		b.tb.Fatalf("the page reloaded")
	}
}

func (b *browser) noProblems() {
	b.tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.tb.Errorf("browser: %s", p)
	}
}

const domIDs = `Array.from(document.querySelectorAll('#timeline > li')).map(l => l.id)`

// The page script inserts live lines at their EVT-id place, never twice,
// shows its connection state, resumes after a replica restart, and pages
// older lines in.
func TestBrowserLivePage(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	g := e.gen("g1")
	evs := g.chats(t, 9)
	e.upsert(evs[0], evs[1], evs[2], evs[3], evs[5])
	b := mustOpenBrowser(t)

	b.do(chromedp.Navigate(e.url("/games/g1")))
	b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)

	// evs[4] is older than evs[5], already shown: it goes below it.
	e.upsert(evs[6], evs[4])
	b.until("two more lines", `document.querySelectorAll('#timeline > li').length === 5`)
	if got, want := b.eval(domIDs), []string{evs[6].EvtID, evs[5].EvtID, evs[4].EvtID, evs[3].EvtID, evs[2].EvtID}; !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}

	// A restart of the replica: reconnecting, then live again from the
	// page's cursor, with the lines committed while it was down.
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	b.until("reconnecting", `['reconnecting', 'offline'].includes(document.querySelector('#conn').dataset.state)`)
	e.upsert(evs[7])
	e.cfg.Addr = e.srv.Addr()
	e.start()
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live'`)
	e.upsert(evs[8])
	b.until("resumed lines", `document.querySelectorAll('#timeline > li').length === 7`)

	// Older lines page in below, in order, and the link goes when done.
	b.do(chromedp.Click(chromedp.CSS("#older")))
	b.until("older lines", `document.querySelectorAll('#timeline > li').length === 9`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	b.until("no more older link", `document.querySelector('#older') === null`)
	if v := b.eval(`[document.documentElement.dataset.csp || '']`); v[0] != "" {
		t.Fatalf("CSP %s", v[0])
	}
	b.noProblems()
}

func TestBrowserReplayAndStatus(t *testing.T) {
	st := feed.Status{Group: "feed", Streams: []feed.StreamStatus{{Stream: event.StreamKey("g1"), Game: "g1", Length: 3,
		Consumers: []feed.ConsumerStatus{{Name: "<r1>", Alive: true}}}}}
	e := MustOpenEnv(t, func(c *web.Config) { c.Status = func(context.Context) (feed.Status, error) { return st, nil } })
	g := e.gen("g1")
	e.upsert(
		g.ev(t, event.KindGameStarted, "title", "Replay me", "rounds", "1", "code_length", "2", "palette", "🍎🍌🍇"),
		g.ev(t, event.KindPlayerJoined, "player", "ada", "avatar", "🦉"),
		g.ev(t, event.KindChat, "player", "ada", "text", "<img src=x onerror=alert(1)>"),
	)
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(e.url("/games/g1/replay")))
	b.until("timeline loaded", `document.querySelector('#replay').dataset.state === 'ready'`)
	b.do(chromedp.SetValue(chromedp.CSS("#speed"), "50"), chromedp.Click(chromedp.CSS("#play")))
	b.until("replayed to the end", `document.querySelector('#replay').dataset.pos === '3'`)
	if n := b.eval(`Array.from(document.querySelectorAll('#timeline img'))`); len(n) != 0 {
		t.Fatalf("hostile text became an element")
	}
	b.do(chromedp.Navigate(e.url("/status")))
	b.until("status refreshed", `document.querySelector('#status').dataset.state === 'live'`)
	if got := b.eval(`[String(document.querySelectorAll('#status table').length), String(document.querySelector('#status-offline').hidden)]`); got[0] != "1" || got[1] != "true" {
		t.Fatalf("status after a refresh: tables, offline hidden = %q", got)
	}
	if got := b.eval(`[document.querySelector('#streams .chip').textContent]`); len(got) != 1 || !strings.HasPrefix(got[0], "<r1> · 0") {
		t.Fatalf("status chip %q", got)
	}
	b.do(chromedp.Navigate(e.url("/")))
	b.until("index refreshed", `document.querySelector('#index').dataset.state === 'live'`)
	b.noProblems()
}

package web_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/web"
)

// wallProxy is an HTTP proxy in front of a server that refuses websockets,
// as some corporate proxies do, and passes every other request on. kill
// ends the responses it is relaying (an event stream among them) the way a
// proxy's restart does.
type wallProxy struct {
	srv     *http.Server
	ln      net.Listener
	mu      sync.Mutex
	kills   []context.CancelFunc
	refused int
	open    bool // websockets pass
}

func mustStartWallProxy(tb testing.TB, to string) *wallProxy {
	tb.Helper()
	target, err := url.Parse(to)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &wallProxy{ln: ln}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = slog.NewLogLogger(testLogger().Handler(), slog.LevelWarn)
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			p.mu.Lock()
			open := p.open
			if !open {
				p.refused++
			}
			p.mu.Unlock()
			if !open {
				http.Error(w, "websockets are not allowed by policy", http.StatusForbidden)
				return
			}
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		p.mu.Lock()
		p.kills = append(p.kills, cancel)
		p.mu.Unlock()
		rp.ServeHTTP(w, r.WithContext(ctx))
	}), ErrorLog: rp.ErrorLog}
	go p.srv.Serve(ln)
	tb.Cleanup(func() { p.srv.Close() })
	return p
}

func (p *wallProxy) url(path string) string { return "http://" + p.ln.Addr().String() + path }

// kill ends every response relayed so far.
func (p *wallProxy) kill() {
	p.mu.Lock()
	kills := p.kills
	p.kills = nil
	p.mu.Unlock()
	for _, k := range kills {
		k()
	}
}

// letThrough lets websockets pass from now on.
func (p *wallProxy) letThrough() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = true
}

func (p *wallProxy) websocketsRefused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Behind a proxy that refuses websockets the page falls back to the event
// stream: it goes live, shows live lines in order, counts as a viewer, and
// after the stream is cut resumes from its cursor with every line once and
// no reload.
func TestBrowserEventStreamFallback(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 9)
	e.upsert(evs[:3]...)
	px := mustStartWallProxy(t, e.srv.URL())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.url("/games/g1")))
	b.until("live over the event stream", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))
	if n := px.websocketsRefused(); n < 2 {
		t.Fatalf("%d websockets tried, want the page to try twice before it falls back", n)
	}
	if st := e.srv.Stats(); st.EventStreams != 1 || st.Clients != 0 {
		t.Fatalf("server sees %d streams and %d websockets, want 1 and 0", st.EventStreams, st.Clients)
	}
	b.until("one watching", `document.getElementById('watching').dataset.n === '1'`)

	e.upsert(evs[3:6]...)
	b.until("live lines", `document.querySelectorAll('#timeline > li').length === 6`)

	px.kill()
	waitFor(t, 5*time.Second, "the server to see the stream end", func() bool { return e.srv.Stats().EventStreams == 0 })
	e.upsert(evs[6:]...)
	waitFor(t, 10*time.Second, "the page to open a new stream", func() bool { return e.srv.Stats().EventStreams == 1 })
	b.until("every line", `document.querySelectorAll('#timeline > li').length === 9`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	b.until("live again", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`)
	if n := b.num(`window.__mark || 0`); n != 1 {
		t.Fatalf("the page reloaded")
	}
	b.noProblems()
}

// A page on the event stream tries a websocket again: once websockets pass
// (here the wall opens; in life, a replica that was down is back), it
// moves to one, without a gap, a duplicate or a reload.
func TestBrowserEventStreamUpgrades(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.UpgradeRetry = 200 * time.Millisecond })
	g := e.gen("g1")
	evs := g.chats(t, 6)
	e.upsert(evs[:2]...)
	px := mustStartWallProxy(t, e.srv.URL())
	b := mustOpenBrowser(t)
	b.do(chromedp.Navigate(px.url("/games/g1")))
	b.until("live over the event stream", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1`))
	refused := px.websocketsRefused()
	waitFor(t, 10*time.Second, "the page to try a websocket again", func() bool { return px.websocketsRefused() > refused })
	e.upsert(evs[2:4]...)
	b.until("lines over the stream", `document.querySelectorAll('#timeline > li').length === 4`)

	px.letThrough()
	b.until("moved to a websocket", `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'ws'`)
	waitFor(t, 5*time.Second, "the stream let go", func() bool {
		st := e.srv.Stats()
		return st.EventStreams == 0 && st.Clients == 1
	})
	e.upsert(evs[4:]...)
	b.until("every line", `document.querySelectorAll('#timeline > li').length === 6`)
	if got, want := b.eval(domIDs), reverse(evtIDs(evs)); !eq(got, want) {
		t.Fatalf("timeline %v, want %v", got, want)
	}
	if n := b.num(`window.__mark || 0`); n != 1 {
		t.Fatalf("the page reloaded")
	}
	b.noProblems()
}

package web_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/wallproxy"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// afterFailingStore is the real store whose After (a socket's backfill
// read, after its state frame) fails while fail is set.
type afterFailingStore struct {
	*store.DB
	fail atomic.Bool
}

func (s *afterFailingStore) After(ctx context.Context, game string, seq int64, limit int) ([]store.Line, error) {
	if s.fail.Load() {
		return nil, errors.New("test: backfill read fails")
	}
	return s.DB.After(ctx, game, seq, limit)
}

// A replica whose every new socket brings its state frame and then ends
// (here its backfill read fails; a proxy that cuts a frame the same way
// each time does the same) is tried again with a growing backoff. The
// page reset its backoff on each connection's first frame, so it tried
// such a replica again within 0.5 s for ever, and so did every page of it.
func TestBrowserShortConnectionsBackOff(t *testing.T) {
	var fs afterFailingStore
	e := MustOpenEnv(t, func(c *web.Config) {
		fs.DB = c.Store.(*store.DB)
		c.Store = &fs
	})
	g := e.gen("g1")
	evs := g.chats(t, 4)
	e.upsert(evs[:2]...)
	px := mustStartProxy(t, e.srv.Addr())
	b := mustOpenBrowser(t)
	b.openMarked(px.url("/games/g1"))
	// The jitter at its top, so that each wait is its backoff's bound; the
	// times the page opens its sockets are kept.
	b.do(chromedp.Evaluate[chromedp.Void](`Math.random = () => 0.999; window.__opened = [];
		const W = window.WebSocket;
		window.WebSocket = class extends W { constructor(u, p) { super(u, p); window.__opened.push(performance.now()); } };`))

	fs.fail.Store(true)
	px.closeAll()
	b.until("four tries", `window.__opened.length >= 4`)
	gaps := b.eval(`window.__opened.slice(1).map((t, i) => String(Math.round(t - window.__opened[i])))`)
	// With the backoff: 0.5 s, 1 s, 2 s, 4 s bounds, so the third gap is
	// about 4 s; without it every gap is about 0.5 s.
	if n := b.num(`window.__opened[3] - window.__opened[2]`); n < 2000 {
		t.Fatalf("gaps between tries %v ms: the backoff does not grow", gaps)
	}

	// The replica heals: the page resumes, every line once, no reload.
	fs.fail.Store(false)
	e.upsert(evs[2:]...)
	b.showsOnce(evs)
	b.noProblems()
}

// damageLine makes every line frame that holds window.__damageID arrive
// cut in half, on a websocket and on an event stream alike, as a proxy
// that cuts one frame the same way each time would.
const damageLine = `(() => {
  const wrap = (proto) => {
    const d = Object.getOwnPropertyDescriptor(proto, 'onmessage');
    Object.defineProperty(proto, 'onmessage', {
      configurable: true,
      get() { return d.get.call(this); },
      set(h) {
        d.set.call(this, h && function (ev) {
          if (window.__damageID && typeof ev.data === 'string' && ev.data.indexOf(window.__damageID) >= 0) {
            ev = new MessageEvent('message', { data: ev.data.slice(0, ev.data.length >> 1) });
          }
          return h.call(this, ev);
        });
      },
    });
  };
  wrap(WebSocket.prototype);
  wrap(EventSource.prototype);
})();`

// A page on the event stream restarts its stream on a frame it cannot
// read, and a frame damaged the same way on every stream (a proxy's bug)
// has it restart again and again: with the backoff, as a socket is
// closed and tried again. The stream was restarted at once, the backoff
// set back to nothing, so the page opened streams, each with its
// backfill, as fast as the server answered, for ever.
func TestBrowserDamagedStreamBacksOff(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 5)
	e.upsert(evs[:3]...)
	b := mustOpenBrowser(t)
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: damageLine}); err != nil {
		t.Fatal(err)
	}
	b.openMarked(wallproxy.Start(t, e.srv.URL()).URL("/games/g1")) // no websockets there
	b.until("on the event stream", `document.getElementById('game').dataset.transport === 'sse'`)
	b.do(chromedp.Evaluate[chromedp.Void](`Math.random = () => 0.999; window.__opened = [];
		const E = window.EventSource;
		window.EventSource = class extends E { constructor(u, o) { super(u, o); window.__opened.push(performance.now()); } };
		window.__damageID = '` + evs[3].EvtID + `';`))

	e.upsert(evs[3])
	// Each stream brings the line damaged again. Three streams: without
	// the backoff they come within a few ms of each other.
	waitFor(t, 30*time.Second, "three streams", func() bool { return b.num(`window.__opened.length`) >= 3 })
	gaps := b.eval(`window.__opened.slice(1).map((t, i) => String(Math.round(t - window.__opened[i])))`)
	if n := b.num(`window.__opened[2] - window.__opened[1]`); n < 500 {
		t.Fatalf("gaps between streams %v ms: restarted without a backoff", gaps)
	}

	// The damage stops: every line once, in order, no reload.
	b.do(chromedp.Evaluate[chromedp.Void](`window.__damageID = ''`))
	e.upsert(evs[4])
	b.showsOnce(evs)
	b.noProblems()
}

package web_test

import (
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/wallproxy"
	"github.com/codemojex/feed/web"
)

// damageFrames makes the page's next line frame arrive cut in half, once
// window.__damage is set: on a websocket and on an event stream alike, as
// the truncated message of one chaos run did (docs/benchmarks-journal.md).
const damageFrames = `(() => {
  const wrap = (proto) => {
    const d = Object.getOwnPropertyDescriptor(proto, 'onmessage');
    Object.defineProperty(proto, 'onmessage', {
      configurable: true,
      get() { return d.get.call(this); },
      set(h) {
        d.set.call(this, h && function (ev) {
          if (window.__damage && typeof ev.data === 'string' && ev.data.indexOf('"t":"line"') >= 0) {
            window.__damage = false;
            window.__damaged = (window.__damaged || 0) + 1;
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

// A frame the page cannot read (cut short on its way) may have been a
// line: the page takes a new connection from its cursor, which brings that
// line again, rather than leave a gap. Every line is shown once, in order,
// without a reload, on either transport.
func TestBrowserDamagedFrameResumes(t *testing.T) {
	for _, transport := range []string{"ws", "sse"} {
		t.Run(transport, func(t *testing.T) {
			e := MustOpenEnv(t, nil)
			g := e.gen("g1")
			evs := g.chats(t, 6)
			e.upsert(evs[:3]...)
			url := e.url("/games/g1")
			if transport == "sse" {
				url = wallproxy.Start(t, e.srv.URL()).URL("/games/g1") // no websockets there
			}
			b := mustOpenBrowser(t)
			if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: damageFrames}); err != nil {
				t.Fatal(err)
			}
			b.do(chromedp.Navigate(url))
			b.until("live over "+transport, `document.querySelector('#conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === '`+transport+`'`)
			b.do(chromedp.Evaluate[chromedp.Void](`window.__mark = 1; window.__damage = true`))

			e.upsert(evs[3])
			b.until("the damaged line shown from a new connection", `document.querySelectorAll('#timeline > li').length === 4`)
			if n := b.num(`window.__damaged || 0`); n != 1 {
				t.Fatalf("%v frames damaged, want 1", n)
			}
			if transport == "ws" && e.cfg.WSEngine != web.WSEngineStd && e.srv.Stats().FramesDeflated == 0 {
				t.Fatalf("no frame compressed: Chromium offers permessage-deflate, the nbio engine takes it")
			}
			e.upsert(evs[4:]...)
			b.showsOnce(evs)
			b.noProblems()
		})
	}
}

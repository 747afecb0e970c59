package web_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

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

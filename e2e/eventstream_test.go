package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/browsertest"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/wallproxy"
)

// TestBrowserReconnectEventStream is TestBrowserReconnect behind a proxy
// that refuses websockets: the page falls back to the event stream, its
// replica is SIGKILLed and restarted while events keep coming, and the page
// resumes over the stream and ends equal to the store's timeline.
func TestBrowserReconnectEventStream(t *testing.T) {
	c := newCluster(t)
	r1 := c.start("r1")
	c.start("r2") // keeps consuming while r1 is down
	w := c.writer("wall")
	w.chat("ada", "hello")
	c.waitStored("wall", w.ids, 10*time.Second)

	px := wallproxy.Start(t, r1.url(""))
	ctx := browsertest.MustStart(t)
	open(t, ctx, px.URL("/games/wall"))
	onStream := func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`document.getElementById('conn').dataset.state === 'live' && document.getElementById('game').dataset.transport === 'sse'`))
		return err == nil && v
	}
	proctest.WaitFor(t, 10*time.Second, onStream, "the page live on the event stream")

	all := crashWhileWriting(t, ctx, c, r1, w, func() {
		proctest.WaitFor(t, 30*time.Second, onStream, "the page live on the event stream again")
	})
	c.waitStored("wall", all, 20*time.Second)
	waitTimeline(t, ctx, reversed(sortedCopy(all)), 10*time.Second)
	if px.Refused() < 2 {
		t.Fatalf("the proxy refused %d websockets: the page did not try them first", px.Refused())
	}
}

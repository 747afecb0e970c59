package web_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

func TestLiveBackfillThenLive(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g, other := e.gen("g1"), e.gen("other")
	first := g.chats(t, 5)
	// Interleave another game's lines: they must not reach g1's socket.
	e.upsert(first[:2]...)
	e.upsert(other.chats(t, 3)...)
	e.upsert(first[2:]...)

	w := e.dial("g1", 0)
	if f := w.next(); f.T != "state" || !strings.Contains(f.HTML, `id="scoreboard"`) {
		t.Fatalf("first frame %+v, want the scoreboard state", f)
	}
	got := w.lines(5)
	if !eq(ids(got), evtIDs(first)) {
		t.Fatalf("backfill ids %v, want %v", ids(got), evtIDs(first))
	}
	for i, f := range got {
		if i > 0 && f.Seq <= got[i-1].Seq {
			t.Fatalf("backfill seqs not increasing: %d after %d", f.Seq, got[i-1].Seq)
		}
		if !strings.HasPrefix(f.HTML, `<li id="`+f.ID+`" data-seq="`) || !strings.HasSuffix(f.HTML, "</li>") {
			t.Fatalf("line html %q is not the wrapped <li>", f.HTML)
		}
	}

	live := g.chats(t, 3)
	e.upsert(other.chats(t, 2)...)
	e.upsert(live...)
	if got := w.lines(3); !eq(ids(got), evtIDs(live)) {
		t.Fatalf("live ids %v, want %v", ids(got), evtIDs(live))
	}
}

func TestLiveStateFrameFollowsLines(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	w := e.dial("g1", 0)
	if f := w.next(); f.T != "state" || !strings.Contains(f.HTML, "No players yet") {
		t.Fatalf("first frame %+v, want the empty scoreboard", f)
	}
	e.upsert(g.ev(t, event.KindPlayerJoined, "player", "grace", "avatar", "🦊"))
	if f := w.next(); f.T != "line" {
		t.Fatalf("got %+v, want the line", f)
	}
	f := w.next()
	if f.T != "state" || !strings.Contains(f.HTML, "grace") || !strings.Contains(f.HTML, "🦊") {
		t.Fatalf("got %+v, want a state frame with the new player", f)
	}
}

func TestLiveResumeFromCursorNoDuplicates(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	a := g.chats(t, 4)
	e.upsert(a...)

	w := e.dial("g1", 0)
	got := w.lines(4)
	cursor := got[len(got)-1].Seq
	w.c.Close(websocket.StatusNormalClosure, "")

	b := g.chats(t, 3)
	e.upsert(b...)
	w2 := e.dial("g1", cursor)
	if got := w2.lines(3); !eq(ids(got), evtIDs(b)) {
		t.Fatalf("resumed ids %v, want only the new %v", ids(got), evtIDs(b))
	}
	w2.quiet(200 * time.Millisecond)
}

// Lines committed between the page's read and the websocket's subscription
// arrive over the websocket.
func TestLiveRenderToSubscribeGap(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	before := g.chats(t, 3)
	e.upsert(before...)

	resp, page := e.get("/games/g1")
	if resp.StatusCode != 200 {
		t.Fatalf("page: %d", resp.StatusCode)
	}
	seq := pageSeq(t, page)
	if !eq(pageLines(page), reverse(evtIDs(before))) {
		t.Fatalf("page lines %v, want newest first %v", pageLines(page), reverse(evtIDs(before)))
	}

	gap := g.chats(t, 2)
	e.upsert(gap...)
	w := e.dial("g1", seq)
	if got := w.lines(2); !eq(ids(got), evtIDs(gap)) {
		t.Fatalf("after the page: %v, want %v", ids(got), evtIDs(gap))
	}
}

// While a writer commits continuously, clients joining at any cursor get
// every later line exactly once, in seq order: nothing falls between the
// backfill query and the live subscription.
func TestLiveNoGapWhileWriting(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	const total = 300
	evs := g.chats(t, total)

	var mu sync.Mutex
	seqOf := map[string]int64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < total; i += 3 {
			res, err := e.db.Upsert(context.Background(), evs[i:min(i+3, total)])
			if err != nil {
				t.Errorf("upsert: %v", err)
				return
			}
			mu.Lock()
			for j, r := range res {
				seqOf[evs[i+j].EvtID] = r.Seq
			}
			mu.Unlock()
			e.ring()
		}
	}()

	type joined struct {
		w     *wsClient
		after int64
	}
	var clients []joined
	for len(clients) < 8 {
		after, err := e.db.MaxSeq(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, joined{e.dial("g1", after), after})
		time.Sleep(time.Millisecond) // spread the joins over the writes; not synchronisation
	}
	<-done
	if t.Failed() {
		return
	}
	for i, c := range clients {
		var want []string
		for _, ev := range evs {
			if seqOf[ev.EvtID] > c.after {
				want = append(want, ev.EvtID)
			}
		}
		got := c.w.lines(len(want))
		if !eq(ids(got), want) {
			t.Fatalf("client %d after %d: got %d lines not equal to the %d committed after, in order:\ngot  %v\nwant %v", i, c.after, len(got), len(want), ids(got), want)
		}
		c.w.quiet(50 * time.Millisecond)
	}
}

// Each line is encoded once per game, however many clients watch it.
func TestLiveFramesEncodedOncePerGame(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	const clients, lines = 6, 20
	var ws []*wsClient
	for range clients {
		w := e.dial("g1", 0)
		if f := w.next(); f.T != "state" {
			t.Fatalf("first frame %+v", f)
		}
		ws = append(ws, w)
	}
	before := e.srv.Stats()
	evs := g.chats(t, lines)
	e.upsert(evs...)
	for _, w := range ws {
		if got := w.lines(lines); !eq(ids(got), evtIDs(evs)) {
			t.Fatalf("client got %v", ids(got))
		}
	}
	// A frame is counted sent when its write returns, which may be after
	// the client has read it.
	waitFor(t, 5*time.Second, "the frames counted sent", func() bool {
		return e.srv.Stats().FramesSent-before.FramesSent >= int64(clients*lines)
	})
	after := e.srv.Stats()
	if n := after.LinesEncoded - before.LinesEncoded; n != lines {
		t.Fatalf("line frames encoded %d, want %d (once per line, not per client)", n, lines)
	}
	if after.Hubs != 1 || after.Clients != clients {
		t.Fatalf("hubs %d clients %d, want 1 and %d", after.Hubs, after.Clients, clients)
	}
	for _, w := range ws {
		w.c.Close(websocket.StatusNormalClosure, "")
	}
	waitFor(t, 5*time.Second, "hub removed", func() bool { s := e.srv.Stats(); return s.Hubs == 0 && s.Clients == 0 })
}

func TestTailerWakeups(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func(*web.Config)
		ring  bool
		lines int
	}{
		// A doorbell wakes the tailer long before its poll interval.
		{"doorbell", func(c *web.Config) { c.TailEvery = time.Hour }, true, 2},
		// Without a doorbell the poll alone delivers (a lost PUBLISH costs
		// at most TailEvery).
		{"poll without doorbell", func(c *web.Config) { c.TailEvery = 100 * time.Millisecond; c.Doorbell = nil }, false, 2},
		// One doorbell for more lines than a page: the pass reads page
		// after page, and none waits for the next wake-up.
		{"doorbell, lines past a page", func(c *web.Config) { c.TailEvery = time.Hour; c.TailBatch = 2 }, true, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, tt.cfg)
			w := e.dial("g1", 0)
			w.next() // state
			// A first line through the tailer: the backfill is over, and
			// the lines below can reach the client only live.
			g := e.gen("g1")
			first := g.chats(t, 1)
			if _, err := e.db.Upsert(context.Background(), first); err != nil {
				t.Fatal(err)
			}
			if tt.ring {
				e.ring()
			}
			if got := w.lines(1); !eq(ids(got), evtIDs(first)) {
				t.Fatalf("got %v", ids(got))
			}
			evs := g.chats(t, tt.lines)
			if _, err := e.db.Upsert(context.Background(), evs); err != nil {
				t.Fatal(err)
			}
			if tt.ring {
				e.ring()
			}
			if got := w.lines(tt.lines); !eq(ids(got), evtIDs(evs)) {
				t.Fatalf("got %v", ids(got))
			}
		})
	}
}

// An event with an older EVT id stored after newer ones is served at its
// sorted place on the page.
func TestGamePageOrderByEvtID(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 3)
	e.upsert(evs[0], evs[2])
	e.upsert(evs[1]) // a re-claimed older event arrives last
	_, page := e.get("/games/g1")
	want := reverse(evtIDs(evs))
	if got := pageLines(page); !eq(got, want) {
		t.Fatalf("page lines %v, want %v", got, want)
	}
}

// Lines the tailer hands off between a socket's subscription and its
// backfill query reach the socket exactly once (hub copy or backfill copy).
func TestLiveSubscribeBackfillWindow(t *testing.T) {
	var e *env
	var gap []store.Event
	var once sync.Once
	restore := web.SetTestHookSubscribed(func(string) {
		// This runs on the server's goroutine: report with Error, not Fatal.
		once.Do(func() {
			res, err := e.db.Upsert(context.Background(), gap)
			if err != nil {
				t.Errorf("upsert: %v", err)
				return
			}
			e.ring()
			if _, err := proc.Poll(context.Background(), 5*time.Second, "the tailer past the gap", func() (bool, error) {
				return e.srv.Stats().TailCursor >= res[len(res)-1].Seq, nil
			}); err != nil {
				t.Error(err)
			}
		})
	})
	defer restore()
	e = MustOpenEnv(t, nil)
	g := e.gen("g1")
	first := g.chats(t, 2)
	e.upsert(first...)
	gap = g.chats(t, 3)
	later := g.chats(t, 2)

	w := e.dial("g1", 0)
	want := append(append(evtIDs(first), evtIDs(gap)...), evtIDs(later)...)
	got := w.lines(5)
	e.upsert(later...)
	got = append(got, w.lines(2)...)
	if !eq(ids(got), want) {
		t.Fatalf("got %v\nwant %v", ids(got), want)
	}
	w.quiet(100 * time.Millisecond)
}

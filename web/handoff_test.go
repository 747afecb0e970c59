package web_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// own stores evs as this process's consumer would and hands the inserted
// lines to the server (web.Server.Committed), without ringing the doorbell.
func (e *env) own(db *store.DB, evs ...store.Event) []store.Line {
	e.tb.Helper()
	res, err := db.Upsert(context.Background(), evs)
	if err != nil {
		e.tb.Errorf("upsert: %v", err)
		return nil
	}
	var lines []store.Line
	for i, r := range res {
		if r.Err != nil {
			e.tb.Errorf("upsert %s: %v", evs[i].EvtID, r.Err)
		}
		if r.Inserted {
			ev := evs[i]
			lines = append(lines, store.Line{Seq: r.Seq, EvtID: ev.EvtID, Game: ev.Game, Kind: ev.Kind, HTML: ev.HTML, At: ev.At})
		}
	}
	e.srv.Committed(lines)
	return lines
}

// MustOpenPeer opens the env's store file a second time: a peer renderer
// writing to the same store, whose lines reach this server only through
// the store.
func (e *env) MustOpenPeer() *store.DB {
	e.tb.Helper()
	db, err := store.Open(context.Background(), e.db.Path())
	if err != nil {
		e.tb.Fatalf("open peer store: %v", err)
	}
	e.tb.Cleanup(func() { db.Close() })
	return db
}

// Own lines reach the websockets without a doorbell or a poll: the tailer
// takes them from Committed.
func TestHandoffWithoutStoreRead(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TailEvery = time.Hour })
	w := e.dial("g1", 0)
	w.next() // state
	g := e.gen("g1")
	for range 3 {
		evs := g.chats(t, 4)
		e.own(e.db, evs...)
		if got := w.lines(len(evs)); !eq(ids(got), evtIDs(evs)) {
			t.Fatalf("got %v, want %v", ids(got), evtIDs(evs))
		}
	}
	if s := e.srv.Stats(); s.HandoffHits != 3 || s.HandoffMisses != 0 {
		t.Fatalf("hand-off hits %d misses %d, want 3 and 0", s.HandoffHits, s.HandoffMisses)
	}
}

// With the tailer between passes, Committed hands the lines to the hubs
// itself: the frames are out before it returns, with no other goroutine
// scheduled in between.
func TestHandoffOnCommittingGoroutine(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TailEvery = time.Hour })
	w := e.dial("g1", 0)
	w.next() // state: the client is in the hub
	g := e.gen("g1")
	before := e.srv.Stats().LinesEncoded
	evs := g.chats(t, 3)
	e.own(e.db, evs...)
	if got := e.srv.Stats().LinesEncoded - before; got != int64(len(evs)) {
		t.Fatalf("%d line frames made by the time Committed returned, want %d", got, len(evs))
	}
	if got := w.lines(len(evs)); !eq(ids(got), evtIDs(evs)) {
		t.Fatalf("got %v, want %v", ids(got), evtIDs(evs))
	}
}

// While the tailer's goroutine is in a pass, Committed does not wait for
// it: it queues the lines, and the tailer hands them off after its pass.
func TestHandoffWhileTailerBusy(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TailEvery = time.Hour })
	w := e.dial("g1", 0)
	w.next()
	g := e.gen("g1")
	before := e.srv.Stats().LinesEncoded
	release := web.HoldTail(e.srv)
	evs := g.chats(t, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.own(e.db, evs...)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		release()
		t.Fatal("Committed waited for the tailer's pass")
	}
	if got := e.srv.Stats().LinesEncoded - before; got != 0 {
		release()
		t.Fatalf("%d line frames made during the tailer's pass, want 0", got)
	}
	release()
	if got := w.lines(len(evs)); !eq(ids(got), evtIDs(evs)) {
		t.Fatalf("got %v, want %v", ids(got), evtIDs(evs))
	}
}

// Own lines a store read got first (a doorbell rang before Committed) are
// dropped from the hand-off, up to and including the cursor's own line,
// and the hand-off stays a hit: nothing is sent twice, and the store is
// not read again for them.
func TestHandoffOfLinesAlreadyRead(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TailEvery = time.Hour })
	w := e.dial("g1", 0)
	w.next() // state
	g := e.gen("g1")
	// A first line through the tailer: the backfill is over, and the
	// lines below reach the client only by the tailer.
	e.upsert(g.chats(t, 1)...)
	w.lines(1)
	evs := g.chats(t, 2)
	seqs := e.upsert(evs...) // rings: the tailer reads them from the store
	if got := w.lines(len(evs)); !eq(ids(got), evtIDs(evs)) {
		t.Fatalf("got %v, want %v", ids(got), evtIDs(evs))
	}
	before := e.srv.Stats()
	lines := make([]store.Line, len(evs))
	for i, ev := range evs {
		lines[i] = store.Line{Seq: seqs[i], EvtID: ev.EvtID, Game: ev.Game, Kind: ev.Kind, HTML: ev.HTML, At: ev.At}
	}
	e.srv.Committed(lines)
	waitFor(t, 5*time.Second, "the hand-off taken", func() bool { return e.srv.Stats().HandoffHits > before.HandoffHits })
	if s := e.srv.Stats(); s.HandoffMisses != before.HandoffMisses || s.LinesEncoded != before.LinesEncoded {
		t.Fatalf("hand-off misses %d, lines encoded %d after the hand-off of lines read before, want %d and %d",
			s.HandoffMisses, s.LinesEncoded, before.HandoffMisses, before.LinesEncoded)
	}
}

// A peer's line committed between the cursor and the own lines holds them
// back: the tailer reads the store and sends the peer's line first, so
// the browser's cursor never passes a line it has not seen.
func TestHandoffWaitsForPeerLine(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TailEvery = time.Hour })
	peer := e.MustOpenPeer()
	w := e.dial("g1", 0)
	g := e.gen("g1")
	// A first line through the live path: the client's backfill is over,
	// so the peer's line below can only reach it live.
	first := g.chats(t, 1)
	e.own(e.db, first...)
	w.lines(1)
	theirs := g.chats(t, 1)
	if _, err := peer.Upsert(context.Background(), theirs); err != nil { // no doorbell
		t.Fatal(err)
	}
	mine := g.chats(t, 2)
	e.own(e.db, mine...)
	want := append(evtIDs(theirs), evtIDs(mine)...)
	got := w.lines(3)
	if !eq(ids(got), want) {
		t.Fatalf("got %v, want the peer's line first: %v", ids(got), want)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("seqs out of order: %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	if s := e.srv.Stats(); s.HandoffMisses != 1 {
		t.Fatalf("hand-off misses %d, want 1", s.HandoffMisses)
	}
}

// Own and peer writers commit concurrently, with redeliveries (which may
// leave holes in the seqs), while clients join at every cursor: each
// client gets every line after its cursor once, in seq order.
func TestHandoffNoGapNoDuplicate(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TailEvery = 50 * time.Millisecond })
	peer := e.MustOpenPeer()
	games := []string{"g1", "g2"}
	const batches = 60

	var wg sync.WaitGroup
	write := func(db *store.DB, isOwn bool, seed uint64) {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, seed))
		gens := map[string]*gen{}
		for _, g := range games {
			gens[g] = &gen{game: g, m: event.NewMinter(int64(seed))}
		}
		var done []store.Event
		for range batches {
			var evs []store.Event
			for range 1 + r.IntN(4) {
				g := games[r.IntN(len(games))]
				evs = append(evs, gens[g].ev(t, "chat", "player", "ada", "text", "hi"))
			}
			if len(done) > 0 && r.IntN(3) == 0 {
				evs = append(evs, done[r.IntN(len(done))]) // a redelivery: a no-op
			}
			if isOwn {
				e.own(db, evs...)
			} else {
				if _, err := db.Upsert(context.Background(), evs); err != nil {
					t.Errorf("peer upsert: %v", err)
					return
				}
				if r.IntN(2) == 0 {
					e.ring() // a peer's doorbell, sometimes lost
				}
			}
			done = append(done, evs...)
		}
	}
	type joined struct {
		w     *wsClient
		game  string
		after int64
	}
	var clients []joined
	for _, g := range games {
		clients = append(clients, joined{e.dial(g, 0), g, 0})
	}
	wg.Add(2)
	go write(e.db, true, 1)
	go write(peer, false, 2)
	for i := 0; i < 6; i++ {
		after, err := e.db.MaxSeq(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		g := games[i%len(games)]
		clients = append(clients, joined{e.dial(g, after), g, after})
		time.Sleep(5 * time.Millisecond) // spread the joins over the writes; not synchronisation
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, c := range clients {
		all, err := e.db.After(context.Background(), c.game, c.after, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]string, len(all))
		for j, l := range all {
			want[j] = l.EvtID
		}
		got := c.w.lines(len(want))
		if !eq(ids(got), want) {
			t.Fatalf("client %d (%s after %d): got %d lines, want the %d stored after, in seq order:\ngot  %v\nwant %v",
				i, c.game, c.after, len(got), len(want), ids(got), want)
		}
		if !slices.IsSortedFunc(got, func(a, b wireFrame) int { return int(a.Seq - b.Seq) }) {
			t.Fatalf("client %d: seqs out of order", i)
		}
		c.w.quiet(100 * time.Millisecond)
	}
	s := e.srv.Stats()
	t.Logf("hand-off hits %d, misses %d", s.HandoffHits, s.HandoffMisses)
	if s.HandoffHits == 0 {
		t.Fatal("no own batch was handed off directly")
	}
}

package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
	"github.com/codemojex/feed/web"
)

// boardHTML renders game's scoreboard as the store has it now.
func (e *env) boardHTML(game string) string {
	e.tb.Helper()
	b, err := e.db.Scoreboard(context.Background(), game)
	if err != nil {
		e.tb.Fatal(err)
	}
	var sb strings.Builder
	if err := templates.Scoreboard(b).Render(context.Background(), &sb); err != nil {
		e.tb.Fatal(err)
	}
	return sb.String()
}

// Lines that move the scoreboard within one StateEvery get one state
// frame at once and one at the end of the period, which shows them all.
func TestStateFramesCoalesced(t *testing.T) {
	const every = 5 * time.Second
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = every })
	g := e.gen("g1")
	w := e.dial("g1", 0)
	w.next() // state on connect
	players := []string{"ada", "brian", "chloe", "dmitri", "emmy"}
	start := time.Now()
	for _, p := range players {
		e.own(e.db, g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	if d := time.Since(start); d > every/2 {
		t.Fatalf("the writes took %v: too slow for this test's period of %v", d, every)
	}
	// Under load the tailer may see all five lines in one batch and send
	// one frame with all of them; otherwise the first goes out at once and
	// a second, at the end of the period, carries the rest. Either way the
	// last state frame shows the final scoreboard, and there are at most 2.
	final := e.boardHTML("g1")
	var states []wireFrame
	lines := 0
	for lines < len(players) || len(states) == 0 || states[len(states)-1].HTML != final {
		// The coalesced frame comes up to one period after the first.
		f, err := w.read(every + 5*time.Second)
		if err != nil {
			t.Fatalf("read frame (%d lines, %d state frames so far): %v", lines, len(states), err)
		}
		switch f.T {
		case "line":
			lines++
		case "state":
			states = append(states, f)
		}
	}
	if !strings.Contains(states[0].HTML, "ada") {
		t.Fatalf("first state frame %q, want it to show the first player at once", states[0].HTML)
	}
	w.quiet(500 * time.Millisecond)
	if s := e.srv.Stats(); s.StatesEncoded > 2 || s.StatesEncoded < 1 {
		t.Fatalf("state frames encoded %d, want 1 or 2 for %d changes in one period", s.StatesEncoded, len(players))
	}
}

// A state frame whose bytes every client already has is not sent, unless
// a client subscribed since.
func TestStateFrameUnchangedNotSent(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = time.Millisecond })
	g := e.gen("g1")
	w := e.dial("g1", 0)
	w.next()
	e.own(e.db, g.ev(t, event.KindPlayerJoined, "player", "ada", "avatar", "🦊"))
	e.own(e.db, g.ev(t, event.KindPlayerLeft, "player", "ada"))
	for {
		if f := w.next(); f.T == "state" && strings.Contains(f.HTML, `class="player left"`) {
			break
		}
	}
	before := e.srv.Stats()
	e.own(e.db, g.ev(t, event.KindPlayerLeft, "player", "ada")) // a second leave: nothing moves
	waitFor(t, 5*time.Second, "the unchanged state skipped", func() bool { return e.srv.Stats().StatesSkipped > before.StatesSkipped })
	if n := e.srv.Stats().StatesEncoded; n != before.StatesEncoded {
		t.Fatalf("state frames encoded %d → %d, want none for an unchanged scoreboard", before.StatesEncoded, n)
	}
	w2 := e.dial("g1", 0) // a new subscriber: the next state goes out even if unchanged
	w2.lines(3)
	e.own(e.db, g.ev(t, event.KindPlayerLeft, "player", "ada"))
	waitFor(t, 5*time.Second, "a state frame after a subscription", func() bool { return e.srv.Stats().StatesEncoded > before.StatesEncoded })
}

// State frames follow a peer's writes too. Two renderers of a host share
// the store, and the store keeps boards in memory: a peer's commit shows
// only as a gap in seqs, which must evict the boards it touched. Here each
// peer write is followed by an own write before the tailer hears of it (no
// doorbell, no poll), so the own commit is the first to see the gap; after
// it, the state frames must come to show what a fresh read of the file
// shows, the peer's change included.
func TestStateFramesFollowPeers(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.StateEvery = 10 * time.Millisecond
		c.TailEvery = time.Hour
	})
	peer := e.MustOpenPeer()
	g := e.gen("g1")
	w := e.dial("g1", 0)
	type write struct {
		kind string
		kv   []string
	}
	pairs := []struct{ peer, own write }{
		{write{event.KindPlayerJoined, []string{"player", "brian", "avatar", "🐼"}},
			write{event.KindPlayerJoined, []string{"player", "ada", "avatar", "🦊"}}},
		{write{event.KindGuess, []string{"player", "brian", "guess", "🍒🥝🍋🫐", "exact", "3", "near", "0"}},
			write{event.KindGuess, []string{"player", "ada", "guess", "🍎🍌🍇🍓", "exact", "1", "near", "2"}}},
		{write{event.KindRoundWon, []string{"player", "brian", "round", "1", "points", "10"}},
			write{event.KindChat, []string{"player", "ada", "text", "gg"}}},
		{write{event.KindPlayerLeft, []string{"player", "brian"}},
			write{event.KindRoundWon, []string{"player", "ada", "round", "2", "points", "30"}}},
	}
	for i, p := range pairs {
		if _, err := peer.Upsert(context.Background(), []store.Event{g.ev(t, p.peer.kind, p.peer.kv...)}); err != nil {
			t.Fatal(err)
		}
		e.own(e.db, g.ev(t, p.own.kind, p.own.kv...))
		want := e.boardHTML("g1")
		deadline := time.Now().Add(10 * time.Second)
		for {
			f, err := w.read(time.Until(deadline))
			if err != nil {
				t.Fatalf("pair %d (the peer's %s, then an own %s): no state frame shows the store's board: %v\nwant %s",
					i, p.peer.kind, p.own.kind, err, want)
			}
			if f.T == "state" && f.HTML == want {
				break
			}
		}
	}
}

// panel reads w's frames until one shows game's scoreboard as the store
// has it now (a board frame as the panel it adds up to), and returns it.
func (e *env) panel(w *wsClient, game, what string) wireFrame {
	e.tb.Helper()
	want := e.boardHTML(game)
	for {
		f, err := w.read(5 * time.Second)
		if err != nil {
			e.tb.Fatalf("%s: no frame shows the store's panel: %v\nwant %s", what, err, want)
		}
		if f.T == "state" && f.HTML == want {
			return f
		}
	}
}

// A panel that differs from the last one broadcast goes out as a board
// frame, its unchanged rows stubbed, which adds up to the store's panel;
// after a new subscription the next panel goes out whole, since the new
// socket's panel came from its own backfill.
func TestBoardFramesPatchThePanel(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = time.Millisecond })
	g := e.gen("g1")
	for _, p := range []string{"ada", "brian", "chloé"} {
		e.own(e.db, g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	w := e.dial("g1", 0)
	e.panel(w, "g1", "connect")
	// The first panel after the subscription goes out whole.
	e.own(e.db, g.ev(t, event.KindGuess, "player", "chloé", "guess", "🍎🍌🍇🍓", "exact", "0", "near", "0"))
	if f := e.panel(w, "g1", "a guess after the subscription"); f.Patch {
		t.Fatalf("the panel after a new subscription came as a board frame, want it whole")
	}
	before := e.srv.Stats()
	e.own(e.db, g.ev(t, event.KindGuess, "player", "brian", "guess", "🍒🥝🍋🫐", "exact", "3", "near", "0"))
	if f := e.panel(w, "g1", "a guess"); !f.Patch {
		t.Fatalf("a guess by one of three players came as a whole panel, want a board frame")
	}
	if s := e.srv.Stats(); s.BoardsEncoded != before.BoardsEncoded+1 || s.StatesEncoded != before.StatesEncoded {
		t.Fatalf("frames encoded for one guess: boards %d → %d, states %d → %d; want one board frame",
			before.BoardsEncoded, s.BoardsEncoded, before.StatesEncoded, s.StatesEncoded)
	}

	w2 := e.dial("g1", 0)
	e.panel(w2, "g1", "the second socket's connect")
	e.own(e.db, g.ev(t, event.KindGuess, "player", "ada", "guess", "🍎🍌🍇🍓", "exact", "1", "near", "2"))
	for _, c := range []*wsClient{w, w2} {
		if f := e.panel(c, "g1", "a guess after a subscription"); f.Patch {
			t.Fatalf("the panel after a new subscription came as a board frame, want it whole")
		}
	}
	e.own(e.db, g.ev(t, event.KindRoundWon, "player", "chloé", "round", "1", "points", "10"))
	for _, c := range []*wsClient{w, w2} {
		if f := e.panel(c, "g1", "a round won"); !f.Patch {
			t.Fatalf("a round won came as a whole panel, want a board frame (the leader's row and the order change)")
		}
	}
}

// Board frames go only to a hub whose every socket asked for them
// (board=1): while a client written before them watches the game, every
// socket gets whole panels; once it leaves, patches resume.
func TestBoardFramesOnlyWhenEverySocketAsks(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StateEvery = time.Millisecond })
	g := e.gen("g1")
	for _, p := range []string{"ada", "brian", "chloé"} {
		e.own(e.db, g.ev(t, event.KindPlayerJoined, "player", p, "avatar", "🦊"))
	}
	w, old := e.dial("g1", 0), e.dialWhole("g1", 0)
	e.panel(w, "g1", "connect")
	e.panel(old, "g1", "connect")
	guess := func(p string, n int) {
		e.own(e.db, g.ev(t, event.KindGuess, "player", p, "guess", "🍒🥝🍋🫐", "exact", strconv.Itoa(n%4), "near", "0"))
	}
	for i, p := range []string{"ada", "brian", "chloé"} {
		guess(p, i)
		for _, c := range []*wsClient{w, old} {
			if f := e.panel(c, "g1", "a guess beside an old client"); f.Patch {
				t.Fatalf("guess %d: a board frame on a hub with a socket that did not ask for them", i)
			}
		}
	}
	old.c.Close(websocket.StatusNormalClosure, "")
	waitFor(t, 5*time.Second, "the old client gone", func() bool { return e.srv.Stats().Clients == 1 })
	guess("ada", 3)
	if f := e.panel(w, "g1", "a guess after the old client left"); !f.Patch {
		t.Fatalf("a whole panel after the old client left, want a board frame")
	}
}

package web_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

func TestLiveReset(t *testing.T) {
	tests := []struct {
		name      string
		lines     int
		after     func(max int64) int64
		wantReset bool
		wantLines int // lines before silence, when no reset
	}{
		{"cursor ahead of the store", 3, func(max int64) int64 { return max + 10 }, true, 0},
		{"more than MaxBacklog behind", 12, func(int64) int64 { return 0 }, true, 0},
		{"exactly MaxBacklog behind", 10, func(int64) int64 { return 0 }, false, 10},
		{"at the head", 3, func(max int64) int64 { return max }, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.MaxBacklog = 10; c.TailBatch = 4 })
			e.upsert(e.gen("g1").chats(t, tt.lines)...)
			max, err := e.db.MaxSeq(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			w := e.dial("g1", tt.after(max))
			var got []wireFrame
			lines := 0
			for {
				// Up to 5 s a frame while frames are due (a loaded
				// host's backfill pages can be slow), then 1 s of
				// silence for anything more.
				wait := 5 * time.Second
				if !tt.wantReset && len(got) > 0 && lines == tt.wantLines {
					wait = time.Second
				}
				f, rerr := w.read(wait)
				if rerr != nil {
					err = rerr
					break
				}
				got = append(got, f)
				if f.T == "line" {
					lines++
				}
				if f.T == "reset" {
					break
				}
			}
			reset := len(got) > 0 && got[len(got)-1].T == "reset"
			if reset != tt.wantReset {
				t.Fatalf("frames %+v (then %v): reset %v, want %v", got, err, reset, tt.wantReset)
			}
			if reset {
				_, err := w.read(2 * time.Second)
				if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
					t.Fatalf("after reset: %v, want a normal close", err)
				}
				if n := e.srv.Stats().Resets; n != 1 {
					t.Fatalf("Resets = %d, want 1", n)
				}
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("read: %v, want silence", err)
			}
			n := 0
			for _, f := range got {
				if f.T == "line" {
					n++
				}
			}
			if len(got) == 0 || got[0].T != "state" || n != tt.wantLines {
				t.Fatalf("frames %+v: want state then %d lines", got, tt.wantLines)
			}
		})
	}
}

// A cursor from another store's page (another host) is reset, not trusted.
func TestLiveResetOtherStore(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StoreID = "host-a" })
	e.upsert(e.gen("g1").chats(t, 2)...)
	_, page := e.get("/games/g1")
	if !strings.Contains(page, `data-store="host-a"`) {
		t.Fatal("page does not embed the store id")
	}
	for _, tt := range []struct {
		store string
		reset bool
	}{{"host-a", false}, {"", false}, {"host-b", true}} {
		u := e.wsURL("g1", 1)
		if tt.store != "" {
			u += "&store=" + tt.store
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, _, err := websocket.Dial(ctx, u, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		w := &wsClient{tb: t, c: c}
		f := w.next()
		if (f.T == "reset") != tt.reset {
			t.Fatalf("store %q: first frame %+v, want reset=%v", tt.store, f, tt.reset)
		}
		c.CloseNow()
	}
}

// TestLiveResetSilentPeer: a reset socket whose client does not answer the
// close handshake ends within the server's close grace (1 s), on either
// engine. On the std engine the socket's reader is held back too: cancelling
// it then closed nothing, and coder/websocket waited its own 5 s for the
// peer's close frame (a flake CI caught as "e2 has one client").
func TestLiveResetSilentPeer(t *testing.T) {
	for _, engine := range []string{web.WSEngineStd, web.WSEngineNbio} {
		t.Run(engine, func(t *testing.T) {
			hold, held := make(chan struct{}), make(chan struct{}, 1)
			t.Cleanup(web.SetTestHookReader(func() {
				select {
				case held <- struct{}{}:
				default:
				}
				<-hold
			}))
			t.Cleanup(func() { close(hold) })
			e := MustOpenEnv(t, func(c *web.Config) { c.WSEngine = engine })
			e.upsert(e.gen("g1").chats(t, 2)...)
			w := e.dial("g1", 100)
			if f := w.next(); f.T != "reset" {
				t.Fatalf("first frame %+v, want a reset", f)
			}
			// Nothing reads the client until the server has let go: 3 s is
			// the grace with room to spare, and 2 s short of the 5 s wait.
			waitFor(t, 3*time.Second, "the reset socket to end", func() bool { return e.srv.Stats().Clients == 0 })
			if engine == web.WSEngineStd {
				select {
				case <-held:
				default:
					t.Fatal("the reader hook did not run: the test did not hold the reader back")
				}
			}
			if _, err := w.read(2 * time.Second); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("after reset: %v, want the normal close the server sent", err)
			}
		})
	}
}

// TestLiveResetOtherNumbering: a cursor is checked against the line the
// client says it holds last at or below it (last=EVT_ID; empty: none). A
// store renumbered under the same ID (a backup restored, a peer's file
// copied) answers with another line there, and resuming would skip lines
// the client never had: it is reset instead. The page embeds the line to
// send back with its cursor.
func TestLiveResetOtherNumbering(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 3)
	e.upsert(evs...)
	e.upsert(e.gen("g2").chats(t, 2)...) // the cursor below is past g1's lines
	_, page := e.get("/games/g1")
	if want := `data-last="` + evs[2].EvtID + `"`; !strings.Contains(page, want) {
		t.Fatalf("the page does not embed %s", want)
	}
	_, empty := e.get("/games/g3")
	if !strings.Contains(empty, `data-last=""`) {
		t.Fatal(`a game without lines: the page does not embed data-last=""`)
	}
	held := evs[2].EvtID // g1's line with the greatest seq at or below the cursor
	for _, tt := range []struct {
		name  string
		query func() string // appended to the cursor's URL
		reset bool
		hdr   []string // headers of the handshake
	}{
		{"the line held last", func() string { return "&last=" + held }, false, nil},
		{"no last given: not checked", func() string { return "" }, false, nil},
		{"another line", func() string { return "&last=" + evs[0].EvtID }, true, nil},
		{"a line this store does not have", func() string { return "&last=evt_01ZZZZZZZZZZZZZZZZZZZZZZZZ" }, true, nil},
		{"none held, but the store has lines there", func() string { return "&last=" }, true, nil},
		// Last-Event-ID is an event stream's cursor: a websocket's last is
		// checked whatever headers its handshake carries.
		{"another line, beside a Last-Event-ID", func() string { return "&last=" + evs[0].EvtID }, true, []string{"Last-Event-ID", "1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			max, err := e.db.MaxSeq(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			w := e.dialURL("g1", max, e.wsURL("g1", max)+tt.query(), tt.hdr...)
			f := w.next()
			if tt.reset {
				if f.T != "reset" {
					t.Fatalf("first frame %+v, want a reset", f)
				}
				return
			}
			if f.T == "reset" {
				t.Fatalf("reset, want a resume from seq %d", max)
			}
			next := g.chats(t, 1)
			e.upsert(next...)
			if got := w.lines(1); got[0].ID != next[0].EvtID {
				t.Fatalf("resumed with line %s, want %s", got[0].ID, next[0].EvtID)
			}
			held = next[0].EvtID
		})
	}
}

// TestLiveResetCopiedStore: a host started from a copy of a peer's file (or
// a backup moved into place) numbers what it stores after the copy its own
// way. Its lines of a game may then come in another order than the peer's
// (a late line, retried or reclaimed there, is in stream order here), and a
// page from the peer can hold its cursor's last line here too while a line
// it never had sits below it: checking last alone resumed that page past
// the line. A file found to be a copy takes an identity of its own, so such
// a cursor is reset.
func TestLiveResetCopiedStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	upsert := func(db *store.DB, evs ...store.Event) int64 {
		t.Helper()
		res, err := db.Upsert(ctx, evs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil || !r.Inserted {
				t.Fatalf("upsert: %+v", r)
			}
		}
		return res[len(res)-1].Seq
	}
	g, other := &gen{game: "g1", m: event.NewMinter(1)}, &gen{game: "g2", m: event.NewMinter(2)}
	a := mustOpenStoreAt(t, pa)
	upsert(a, g.chats(t, 1)...)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pa)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	a = mustOpenStoreAt(t, pa)
	b := mustOpenStoreAt(t, pb) // host B, started from A's file

	late := g.ev(t, event.KindChat, "player", "cy", "text", "late")
	held := g.ev(t, event.KindChat, "player", "bob", "text", "held")
	x := other.ev(t, event.KindChat, "player", "dan", "text", "elsewhere")
	// A: the page's cursor is x's seq, after held; late comes after it.
	cursor := upsert(a, held)
	cursor = upsert(a, x)
	upsert(a, late)
	// B: the same entries in stream order.
	upsert(b, late)
	upsert(b, held)
	upsert(b, x)
	idA, err := a.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idB, err := b.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	e := MustOpenEnv(t, func(c *web.Config) { c.Store, c.StoreID = b, idB })
	u := e.wsURL("g1", cursor) + "&store=" + idA + "&last=" + held.EvtID
	w := e.dialURL("g1", cursor, u)
	if f := w.next(); f.T == "reset" {
		return
	}
	next := g.chats(t, 1)
	upsert(b, next...)
	e.ring()
	got := ids(w.lines(1))
	for !slices.Contains(got, next[0].EvtID) {
		got = append(got, ids(w.lines(1))...)
	}
	if !slices.Contains(got, late.EvtID) {
		t.Fatalf("resumed on a copy of the page's store with lines %v: %s (stored on the page's host after its cursor) is missing, and no reset", got, late.EvtID)
	}
}

// TestLiveNoResetAfterNewestDeleted: a page's cursor is the store's max seq
// when it was served, which may be another game's line. Deleting that game
// (feedctl, or a prune of the newest lines) lowers max(seq) below the
// cursor, though no line the page lacks was ever numbered there: seqs are
// never reused (AUTOINCREMENT). The cursor is checked against the highest
// seq ever given, so the page resumes instead of being told to reload.
func TestLiveNoResetAfterNewestDeleted(t *testing.T) {
	ctx := context.Background()
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 3)...)
	e.upsert(e.gen("g2").chats(t, 2)...)
	cursor, err := e.db.MaxSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.DeleteGame(ctx, "g2"); err != nil {
		t.Fatal(err)
	}
	if max, _ := e.db.MaxSeq(ctx); max >= cursor {
		t.Fatalf("max seq %d after the delete, want below the cursor %d", max, cursor)
	}
	w := e.dial("g1", cursor)
	if f := w.next(); f.T != "state" {
		t.Fatalf("first frame %+v, want state", f)
	}
	e.upsert(e.gen("g1").chats(t, 1)...)
	if f := w.lines(1)[0]; f.Seq <= cursor {
		t.Fatalf("line %+v, want the new line after seq %d", f, cursor)
	}
	// Ahead of every seq ever given is still a reset.
	w2 := e.dial("g1", cursor+100)
	for {
		f, err := w2.read(2 * time.Second)
		if err != nil {
			t.Fatalf("cursor ahead of every seq: %v, want a reset", err)
		}
		if f.T == "reset" {
			break
		}
	}
}

// TestLiveResetBeforeReplay: a cursor more than MaxBacklog lines of its
// game behind is reset before any line is sent, on a websocket and on an
// event stream: the page reloads instead of replaying the backlog. It used
// to get MaxBacklog lines (pages of TailBatch) and then the reset. Seqs of
// other games after the cursor do not count: a cursor far behind in the
// store but not in its game is served its lines.
func TestLiveResetBeforeReplay(t *testing.T) {
	for _, tt := range []struct {
		name      string
		lines     int // of g1 after the cursor
		wantReset bool
	}{
		{"more than MaxBacklog behind", 12, true},
		{"other games' seqs only", 3, false},
		{"more than a page, within MaxBacklog", 7, false},
		{"exactly MaxBacklog behind", 10, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.MaxBacklog = 10; c.TailBatch = 4 })
			e.upsert(e.gen("g2").chats(t, 20)...) // seqs after the cursor, not of g1
			e.upsert(e.gen("g1").chats(t, tt.lines)...)
			check := func(transport string, frames []wireFrame) {
				t.Helper()
				var kinds []string
				lines := 0
				for _, f := range frames {
					if f.T == "watching" {
						continue
					}
					kinds = append(kinds, f.T)
					if f.T == "line" {
						lines++
					}
				}
				if tt.wantReset && (len(kinds) == 0 || kinds[0] != "reset") {
					t.Fatalf("%s: frames %v, want the reset first, before any line", transport, kinds)
				}
				if !tt.wantReset && (slices.Contains(kinds, "reset") || lines != tt.lines) {
					t.Fatalf("%s: frames %v, want %d lines and no reset", transport, kinds, tt.lines)
				}
			}

			// Frames until the reset, the connection's end, or 1 s of
			// silence once g1's lines are in (up to 5 s a frame before:
			// a loaded host's backfill pages can be slow).
			collect := func(read func(time.Duration) (wireFrame, error)) []wireFrame {
				var frames []wireFrame
				lines := 0
				for {
					wait := 5 * time.Second
					if !tt.wantReset && lines == tt.lines {
						wait = time.Second
					}
					f, err := read(wait)
					if err != nil {
						return frames // closed after the reset, or silent after the backfill
					}
					frames = append(frames, f)
					if f.T == "line" {
						lines++
					}
					if f.T == "reset" {
						return frames
					}
				}
			}
			w := e.dial("g1", 0)
			check("websocket", collect(w.readAny))
			s := e.stream("g1", 0)
			check("event stream", collect(func(d time.Duration) (wireFrame, error) { f, _, err := s.readAny(d); return f, err }))
		})
	}
}

// TestLiveResetWhenBacklogGrowsDuringBackfill: a cursor within MaxBacklog
// when the backfill starts is reset all the same once the lines committed
// while it pages take it past MaxBacklog: the backfill counts what it
// sends, not only what it counted first. Without that bound a game that
// writes faster than a client's backfill reads would page on for ever.
// Exactly MaxBacklog lines are sent whole.
func TestLiveResetWhenBacklogGrowsDuringBackfill(t *testing.T) {
	for _, tt := range []struct {
		name      string
		more      int // g1's lines committed after the first page (8 before it)
		wantReset bool
	}{
		{"past MaxBacklog", 6, true},
		{"up to MaxBacklog", 2, false},
	} {
		for _, transport := range []string{"websocket", "event stream"} {
			t.Run(tt.name+"/"+transport, func(t *testing.T) {
				var g *gen
				var e *env
				var once sync.Once
				restore := web.SetTestHookBackfillPage(func(string, int) {
					once.Do(func() { e.upsert(g.chats(t, tt.more)...) })
				})
				defer restore()
				e = MustOpenEnv(t, func(c *web.Config) { c.MaxBacklog = 10; c.TailBatch = 4 })
				g = e.gen("g1")
				e.upsert(g.chats(t, 8)...) // within MaxBacklog: no count first

				var read func() (wireFrame, error)
				if transport == "websocket" {
					w := e.dial("g1", 0)
					read = func() (wireFrame, error) { return w.readAny(5 * time.Second) }
				} else {
					s := e.stream("g1", 0)
					read = func() (wireFrame, error) { f, _, err := s.readAny(5 * time.Second); return f, err }
				}
				var kinds []string
				lines := 0
				for {
					f, err := read()
					if err != nil {
						break // closed after the reset, or silent after the lines
					}
					if f.T == "watching" {
						continue
					}
					kinds = append(kinds, f.T)
					if f.T == "line" {
						lines++
					}
					if f.T == "reset" || (!tt.wantReset && lines == 8+tt.more) {
						break
					}
				}
				if tt.wantReset && (len(kinds) == 0 || kinds[len(kinds)-1] != "reset") {
					t.Fatalf("frames %v: want a reset once the backfill passed MaxBacklog", kinds)
				}
				if !tt.wantReset && (slices.Contains(kinds, "reset") || lines != 8+tt.more) {
					t.Fatalf("frames %v: want %d lines and no reset", kinds, 8+tt.more)
				}
			})
		}
	}
}

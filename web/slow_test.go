package web_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// smallBufferDialer dials with a tiny socket receive buffer, so a client
// that stops reading backs the server up after a few frames, not megabytes.
func smallBufferDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
}

// dialSmallBuffer dials a websocket through smallBufferDialer.
func (e *env) dialSmallBuffer(game string, after int64) *wsClient {
	e.tb.Helper()
	d := smallBufferDialer()
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, e.wsURL(game, after), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		e.tb.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(1 << 20)
	e.tb.Cleanup(func() { c.CloseNow() })
	return &wsClient{tb: e.tb, c: c}
}

// bigChats are chat lines padded to about size bytes of HTML each.
func (g *gen) bigChats(tb testing.TB, n, size int) []store.Event {
	evs := g.chats(tb, n)
	pad := `<span class="pad">` + strings.Repeat("x", size) + `</span>`
	for i := range evs {
		evs[i].HTML += pad
	}
	return evs
}

// A client that stops reading is dropped and closed with a clear reason; the
// other clients keep receiving promptly; the slow one resumes from its
// cursor without a gap.
func TestLiveSlowClient(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.SendQueue = 32
		c.TailBatch = 16
		c.WriteTimeout = 10 * time.Second
	})
	g := e.gen("g1")
	slow := e.dialSmallBuffer("g1", 0)
	fast := e.dial("g1", 0)
	fast.next() // state

	var all []string
	fastSeen := 0
	// Rounds small enough for a healthy client's queue; the slow client's
	// socket fills up and then its queue.
	for round := 0; e.srv.Stats().SlowCloses == 0; round++ {
		if round == 400 {
			t.Fatal("slow client never dropped")
		}
		evs := g.bigChats(t, 8, 16<<10)
		e.upsert(evs...)
		all = append(all, evtIDs(evs)...)
		got := fast.lines(len(evs))
		if !eq(ids(got), evtIDs(evs)) {
			t.Fatalf("fast client round %d: got %v", round, ids(got))
		}
		fastSeen += len(got)
	}
	if n := e.srv.Stats().SlowCloses; n != 1 {
		t.Fatalf("SlowCloses = %d, want 1 (the fast client must stay)", n)
	}

	// The fast client keeps its latency after the drop.
	marker := g.chats(t, 1)
	start := time.Now()
	e.upsert(marker...)
	if got := fast.lines(1); got[0].ID != marker[0].EvtID {
		t.Fatalf("fast client got %s, want the marker", got[0].ID)
	}
	// Half the write timeout: a fast client held behind the slow one's
	// write waits the whole of it (10 s); a commit, a tailer pass and a
	// read on a loaded host can take a second.
	if d := time.Since(start); d > e.cfg.WriteTimeout/2 {
		t.Fatalf("fast client latency %v after the slow drop", d)
	}
	all = append(all, marker[0].EvtID)

	// The slow client reads what was buffered, then the close with reason.
	var got []string
	var last int64
	var err error
	for {
		var f wireFrame
		f, err = slow.read(15 * time.Second)
		if err != nil {
			break
		}
		if f.T == "line" {
			got = append(got, f.ID)
			last = f.Seq
		}
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "slow client") {
		t.Fatalf("slow client ended with %v, want a policy-violation close saying slow client", err)
	}
	if len(got) == 0 || len(got) >= len(all) {
		t.Fatalf("slow client got %d of %d lines before the close", len(got), len(all))
	}

	// Resume from its cursor: the rest, no gap, no double.
	w := e.dial("g1", last)
	got = append(got, ids(w.lines(len(all)-len(got)))...)
	if !eq(got, all) {
		t.Fatalf("slow client's lines after resume differ from the timeline (%d vs %d)", len(got), len(all))
	}
	w.quiet(100 * time.Millisecond)
}

// A write stuck for WriteTimeout closes the client as slow even though its
// mailbox never filled: the drained batch's shared deadline restarts with
// each frame and still fires on a frame that does not move.
func TestLiveStuckWriteIsSlow(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.SendQueue = 1024
		c.WriteTimeout = 300 * time.Millisecond
		c.PingEvery = time.Hour // the pings must not be what ends it
	})
	g := e.gen("g1")
	e.dialSmallBuffer("g1", 0) // never read
	waitFor(t, 5*time.Second, "client counted", func() bool { return e.srv.Stats().Clients == 1 })
	// 480 lines of 16 KiB: far more than the socket buffers hold, far fewer
	// than the mailbox's 1024 slots.
	for range 60 {
		e.upsert(g.bigChats(t, 8, 16<<10)...)
	}
	waitFor(t, 10*time.Second, "the stuck client closed as slow", func() bool {
		st := e.srv.Stats()
		return st.SlowCloses == 1 && st.Clients == 0
	})
}

// TestBackfillStuckIsSlow: a client that does not read its backfill (here
// 480 lines of 16 KiB, 7.5 MiB: past what the kernel's socket buffers,
// up to 4 MiB here, and the server's send buffer hold) is closed as slow once a write has made no progress for
// WriteTimeout, on both engines, and counted in SlowCloses, rather than
// holding its request for ever; it resumes from the last line it got,
// without a gap.
func TestBackfillStuckIsSlow(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.WriteTimeout = 300 * time.Millisecond
		c.SendBuffer = 256 << 10
		c.PingEvery = time.Hour // the pings must not be what ends it
	})
	g := e.gen("g1")
	var all []string
	for range 60 {
		evs := g.bigChats(t, 8, 16<<10)
		e.upsert(evs...)
		all = append(all, evtIDs(evs)...)
	}
	slow := e.dialSmallBuffer("g1", 0) // reads nothing until it is closed
	waitFor(t, 10*time.Second, "the stuck backfill closed as slow", func() bool {
		st := e.srv.Stats()
		return st.SlowCloses == 1 && st.Clients == 0
	})
	var got []string
	var last int64
	var err error
	for {
		var f wireFrame
		if f, err = slow.read(10 * time.Second); err != nil {
			break
		}
		if f.T == "line" {
			got = append(got, f.ID)
			last = f.Seq
		}
	}
	// Its socket was full, so the close frame may never have reached
	// it: the end is a close saying slow client, or the connection
	// dropped, and either way the page resumes from its last line.
	var ce websocket.CloseError
	if errors.As(err, &ce) && (ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "slow client")) {
		t.Fatalf("the stuck client ended with %v, want a policy-violation close saying slow client, or the connection dropped", err)
	}
	if len(got) >= len(all) {
		t.Fatalf("the stuck client got all %d lines before its close", len(got))
	}
	// The resume reads 7 MiB too: on a server of its own over the same
	// store, with the default write timeout, so that the test's reader
	// stalled 300 ms on a loaded host is not a slow client as well.
	r := MustOpenEnv(t, func(c *web.Config) { c.Store = e.db })
	rest := r.dial("g1", last).lines(len(all) - len(got))
	if want := all[len(got):]; !eq(ids(rest), want) {
		t.Fatalf("resumed after seq %d: %d lines, want the %d after it, in order", last, len(rest), len(want))
	}
}

// A client that reads a long backlog at its own steady pace, taking far
// longer than WriteTimeout in all but making progress all along, is not
// dropped, in its backfill or live. The pings that the server sends
// meanwhile wait in the socket behind the backlog, and their pongs can only
// come once the client has read that far: only a socket where nothing moves
// for WriteTimeout is slow or gone.
func TestSteadyReaderOfLongBacklogKept(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		// Long enough that a reader descheduled on a loaded machine is
		// not taken for a stalled one (a 1 s stall could be); the
		// pacing below makes the read last at least twice as long.
		c.WriteTimeout = 2 * time.Second
		c.PingEvery = 100 * time.Millisecond
		// Room for the whole backlog in bytes (nbio): this client is
		// slow, not too slow.
		c.SendBuffer = 16 << 20
	})
	g := e.gen("g1")
	var all []string
	add := func(n int) {
		evs := g.bigChats(t, n, 16<<10)
		e.upsert(evs...)
		all = append(all, evtIDs(evs)...)
	}
	add(100) // the backfill
	c := e.dial("g1", 0)
	var got []string
	start := time.Now()
	for len(got) < 200 {
		f, err := c.read(5 * time.Second)
		if err != nil {
			t.Fatalf("after %d of %d lines in %v: %v", len(got), len(all), time.Since(start).Round(time.Millisecond), err)
		}
		if f.T != "line" {
			continue
		}
		got = append(got, f.ID)
		if len(got) == 1 {
			add(100) // live
		}
		time.Sleep(25 * time.Millisecond) // pacing: a reader slower than the server, not a sync
	}
	if !eq(got, all) {
		t.Fatalf("lines differ from the timeline")
	}
	if d := time.Since(start); d < 2*e.cfg.WriteTimeout {
		t.Fatalf("read in %v: the backlog was too small to test anything", d)
	}
	if st := e.srv.Stats(); st.SlowCloses != 0 || st.PongTimeouts != 0 {
		t.Fatalf("SlowCloses = %d, PongTimeouts = %d; want the steady reader kept", st.SlowCloses, st.PongTimeouts)
	}
}

// A scoreboard panel of a big game is one frame of more than half the send
// buffer (here about 580 KB for 700 players; SendBuffer is 1 MiB). A client
// whose socket has nothing unsent takes it, on connect as live: it is not
// slow. The nbio engine's backfill waited for the unsent bytes and the
// frame to fit in half the buffer, which a frame that size never does, so
// every websocket and event stream of the game was closed as slow before
// its first frame, and again on every resume.
func TestBigPanelNotSlow(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.WriteTimeout = 2 * time.Second })
	g := e.gen("crowd")
	evs := []store.Event{g.ev(t, event.KindGameStarted, "title", "crowd", "rounds", "3", "code_length", "12", "palette", "🍍🍌🥝🥥")}
	for i := 0; i < 700; i++ {
		name := fmt.Sprintf("player %04d %s", i, strings.Repeat("é", 40))
		evs = append(evs,
			g.ev(t, event.KindPlayerJoined, "player", name, "avatar", "🦊"),
			g.ev(t, event.KindGuess, "player", name, "round", "1", "guess", strings.Repeat("🍍🍌🥝🥥", 3), "exact", "1", "near", "2"))
	}
	e.upsert(evs...)
	if n := len(e.boardHTML("crowd")); n <= (1<<20)/2 || n >= 1<<20 {
		t.Fatalf("panel of %d bytes, want one between half the send buffer and the send buffer", n)
	}
	after := e.upsert(g.ev(t, event.KindChat, "player", "ada", "text", "hi"))[0] - 1

	w := e.dial("crowd", after)
	if f, err := w.read(5 * time.Second); err != nil || f.T != "state" {
		t.Fatalf("websocket: first frame %q, %v; want the panel", f.T, err)
	}
	if got := w.lines(1); got[0].Seq != after+1 {
		t.Fatalf("websocket: line seq %d, want %d", got[0].Seq, after+1)
	}

	s := e.stream("crowd", after)
	if f, _, err := s.readAny(5 * time.Second); err != nil || f.T != "state" {
		t.Fatalf("event stream: first frame %q, %v; want the panel", f.T, err)
	}
	if got := s.lines(1); got[0].Seq != after+1 {
		t.Fatalf("event stream: line seq %d, want %d", got[0].Seq, after+1)
	}
}

// TestSlowClientCountedOnce: a client judged slow by its hub (its mailbox
// full) and by its own writer (a write stuck for WriteTimeout) counts once
// in SlowCloses, on both engines, websocket or event stream. The hook holds
// the client between its hub subscription and its backfill until the hub
// has dropped it for a full mailbox; the backfill, which its client does
// not read, then gets stuck. On the std engine the stuck backfill counted
// the client again (SlowCloses 2), as the live writer did when the hub
// dropped the client between the writer's look at it and its
// unsubscription; the nbio engine's writer looked whether the hub had
// counted it.
func TestSlowClientCountedOnce(t *testing.T) {
	for _, engine := range []string{web.WSEngineStd, web.WSEngineNbio} {
		for _, transport := range []string{"websocket", "event stream"} {
			t.Run(engine+"/"+transport, func(t *testing.T) {
				var once sync.Once
				subscribed, proceed := make(chan struct{}), make(chan struct{})
				t.Cleanup(web.SetTestHookSubscribed(func(string) {
					once.Do(func() {
						close(subscribed)
						<-proceed
					})
				}))
				e := MustOpenEnv(t, func(c *web.Config) {
					c.WSEngine = engine
					c.WriteTimeout = 300 * time.Millisecond
					c.SendBuffer = 256 << 10
					c.SendQueue = 4 // the hub drops the client at the fifth frame
					c.PingEvery = time.Hour
				})
				var unblock sync.Once
				t.Cleanup(func() { unblock.Do(func() { close(proceed) }) }) // before the server's Close, registered earlier
				g := e.gen("g1")
				for range 60 { // 7.5 MiB: past the socket buffers (TestBackfillStuckIsSlow)
					e.upsert(g.bigChats(t, 8, 16<<10)...)
				}
				conn, err := smallBufferDialer().Dial("tcp", e.srv.Addr())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close() })
				// The request, and not a byte read after it.
				if transport == "websocket" {
					fmt.Fprintf(conn, "GET /games/g1/live?after=0 HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
						"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", e.srv.Addr())
				} else {
					fmt.Fprintf(conn, "GET /games/g1/events?after=0 HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", e.srv.Addr())
				}
				select {
				case <-subscribed:
				case <-time.After(10 * time.Second):
					t.Fatal("the client was not subscribed within 10 s")
				}
				e.upsert(g.chats(t, 5)...)
				waitFor(t, 10*time.Second, "the hub dropped the client", func() bool { return e.srv.Stats().SlowCloses >= 1 })
				unblock.Do(func() { close(proceed) })
				waitFor(t, 10*time.Second, "the stuck backfill ended", func() bool {
					st := e.srv.Stats()
					return st.Clients == 0 && st.EventStreams == 0
				})
				if n := e.srv.Stats().SlowCloses; n != 1 {
					t.Fatalf("SlowCloses %d for one slow client, want 1", n)
				}
			})
		}
	}
}

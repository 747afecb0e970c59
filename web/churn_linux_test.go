package web_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/web"
)

// TestChurnGivesBack: a replica runs for weeks while browsers come and go
// on games that start and end, so whatever a websocket or an event stream
// takes (its game's hub, the tailer's scoreboard record of the game, the
// count last sent to the game's viewers, the address's slot and the
// server's reservation, the poller's entry, goroutines, file descriptors)
// must be given back when the last viewer of the game leaves, however it
// leaves: a close handshake, a connection dropped, a stream hung up, a
// reset. Rounds of clients on games that each get a line that moves their
// scoreboard while watched, then leave; after each round the server holds
// what it held after the first, on either engine.
func TestChurnGivesBack(t *testing.T) {
	const games, rounds = 12, 3
	e := MustOpenEnv(t, func(c *web.Config) {
		c.StoreID = "host-a"
		c.UpgradeRate, c.UpgradeBurst = 1000, 1000
		c.MaxSocketsPerClient = 4 * games
		// The tailer forgets a game's scoreboard record at its tick, and
		// the presence beat the count it sent: quick, so the wait is.
		c.TailEvery = 50 * time.Millisecond
		c.PresenceEvery = 100 * time.Millisecond
	})
	name := func(i int) string { return fmt.Sprintf("churn-%02d", i) }
	for i := range games {
		g := e.gen(name(i))
		e.upsert(g.ev(t, event.KindPlayerJoined, "player", "ada", "avatar", "🦊"))
	}
	round := func(r int) {
		t.Helper()
		var ws []*wsClient
		var ss []*sseClient
		for i := range games {
			w := e.dial(name(i), 0)
			w.lines(1)
			ws = append(ws, w)
			s := e.stream(name(i), 0)
			s.lines(1)
			ss = append(ss, s)
		}
		for i := range games {
			g := e.gen(name(i))
			e.upsert(g.ev(t, event.KindPlayerJoined, "player", fmt.Sprintf("p%d", r), "avatar", "🐙"))
		}
		for i := range games {
			ws[i].lines(1)
			ss[i].lines(1)
		}
		// A cursor of another store: reset during the backfill.
		rw := e.dialURL(name(0), 1, e.wsURL(name(0), 1)+"&store=other")
		if f := rw.next(); f.T != "reset" {
			t.Fatalf("round %d: frame %+v, want a reset", r, f)
		}
		for i := range games {
			if i%2 == 0 {
				ws[i].c.Close(websocket.StatusNormalClosure, "bye")
			} else {
				ws[i].c.CloseNow()
			}
			ss[i].cancel()
			ss[i].resp.Body.Close()
		}
		rw.c.CloseNow()
	}
	// A first round fills what is pooled, whatever the clients: the
	// store's readers, the engine's workers.
	round(0)
	settled := func() bool {
		s := e.srv.Stats()
		return s.Clients == 0 && s.EventStreams == 0 && s.Hubs == 0
	}
	wait.For(t, 10*time.Second, "the first round's clients gone", settled)
	baseG, baseFD := runtime.NumGoroutine(), openFiles(t)
	const slack = 4 // goroutines and descriptors that come and go on their own (timers, the test's own client)
	for r := 1; r <= rounds; r++ {
		round(r)
		var held map[string]int
		wait.Until(t, 10*time.Second, func() bool {
			held = web.Retained(e.srv)
			if !settled() || runtime.NumGoroutine() > baseG+slack || openFiles(t) > baseFD+slack {
				return false
			}
			for k, n := range held {
				if n > 0 && k != "rate_buckets" {
					return false
				}
			}
			// One address's bucket: the test's; they go once full.
			return held["rate_buckets"] <= 1
		}, func() string {
			var stacks bytes.Buffer
			if runtime.NumGoroutine() > baseG+slack {
				pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			}
			return fmt.Sprintf("round %d of %d games: the server holds %v, stats %+v; goroutines %d (%d before), open files %d (%d before)\n%s",
				r, games, held, e.srv.Stats(), runtime.NumGoroutine(), baseG, openFiles(t), baseFD, stacks.String())
		})
	}
}

// openFiles returns how many file descriptors the process has open.
func openFiles(tb testing.TB) int {
	tb.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatalf("open files: %v", err)
	}
	return len(fds)
}

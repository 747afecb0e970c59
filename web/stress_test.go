package web_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

var stressFor = flag.Duration("web.stress", 3*time.Second, "how long TestWriteStress writes lines")

// TestWriteStress drives the websocket write path the way a busy replica
// does, for -web.stress and on until its clients have hung up, reconnected
// and (on nbio) left a write partial: lines of every size (escapes, emoji) in bursts,
// clients with a 4 KiB receive window that stall now and then (so the
// kernel takes part of a write and the engine keeps the rest), get dropped
// as slow, hang up on their own, probe, and are pinged every 20 ms; half of
// them take compressed frames (permessage-deflate). Every
// message must be a whole frame, every line above the client's cursor, and
// every client must reach the last line; TestMain fails the run if nbio
// lent one of its buffers to two owners (internal/nbiocheck). It looks for
// the truncated message of one chaos run (docs/benchmarks-journal.md).
func TestWriteStress(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.PingEvery = 20 * time.Millisecond
		c.SendBuffer = 64 << 10
	})
	g := e.gen("g1")
	mallocs := web.NbioMallocs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	clients := make([]*stressClient, 16)
	var wg sync.WaitGroup
	for i := range clients {
		c := &stressClient{idx: i, e: e, game: g.game, board: i%2 == 0}
		clients[i] = c
		wg.Add(1)
		go func() { defer wg.Done(); c.run(ctx) }()
	}

	// Write for -web.stress, and on until every path the test is about has
	// been taken: on a loaded host a few seconds may carry too few lines
	// for any client to reach its hang-up or any write to be partial.
	exercised := func() bool {
		var sessions, hangups int64
		for _, c := range clients {
			sessions, hangups = sessions+c.sessions.Load(), hangups+c.hangups.Load()
		}
		return hangups > 0 && sessions > int64(len(clients)) &&
			(e.cfg.WSEngine == web.WSEngineStd || web.NbioMallocs() != mallocs)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var last int64
	start := time.Now()
	for time.Since(start) < *stressFor || !exercised() && time.Since(start) < *stressFor+60*time.Second {
		evs := make([]store.Event, 1+rng.IntN(4))
		for j := range evs {
			evs[j] = g.ev(t, event.KindChat, "player", "ada", "text", stressText(rng))
		}
		seqs := e.upsert(evs...)
		last = seqs[len(seqs)-1]
		// A writer's pace (up to about 2,500 lines a second), not a wait.
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
	}
	waitFor(t, 60*time.Second, "every client to show the last line", func() bool {
		for _, c := range clients {
			if c.cursor.Load() < last {
				return false
			}
		}
		return true
	})
	cancel()
	wg.Wait()

	var frames, sessions, hangups int64
	for _, c := range clients {
		for _, err := range c.errs {
			t.Error(err)
		}
		frames, sessions, hangups = frames+c.frames, sessions+c.sessions.Load(), hangups+c.hangups.Load()
	}
	st := e.srv.Stats()
	t.Logf("%d lines to %d clients: %d frames, %d sessions (%d hung up by the client, %d closed as slow), nbio buffers %d",
		last, len(clients), frames, sessions, hangups, st.SlowCloses, web.NbioMallocs()-mallocs)
	if hangups == 0 || sessions <= int64(len(clients)) {
		t.Errorf("%d sessions, %d hung up: the close paths were not exercised", sessions, hangups)
	}
	if e.cfg.WSEngine != web.WSEngineStd && web.NbioMallocs() == mallocs {
		t.Errorf("nbio kept no unwritten bytes: the partial-write path was not exercised")
	}
}

// stressText is a chat text of 1 to 280 runes, mixing what escapes (quotes,
// angle brackets, ampersands, backslashes, a line break) with emoji.
func stressText(rng *rand.Rand) string {
	const parts = `a"<>&\` + "\n"
	var b strings.Builder
	for n := 1 + rng.IntN(event.MaxChatRunes); n > 0; n-- {
		if rng.IntN(3) == 0 {
			b.WriteString("🦊")
		} else {
			b.WriteByte(parts[rng.IntN(len(parts))])
		}
	}
	return b.String()
}

// stressClient follows one game from its cursor, reconnecting until the
// test ends.
type stressClient struct {
	idx   int
	e     *env
	game  string
	board bool

	cursor            atomic.Int64
	sessions, hangups atomic.Int64 // read by the writer while the client runs
	frames            int64
	errs              []string
}

func (c *stressClient) run(ctx context.Context) {
	rng := rand.New(rand.NewPCG(uint64(c.idx), 7))
	d := smallBufferDialer() // the server's writes fill up at once
	// Its own address, as distinct browsers have: the per-address limits
	// are not what this test is about.
	d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 3, byte(10+c.idx))}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	for ctx.Err() == nil && len(c.errs) < 5 {
		c.session(ctx, hc, rng)
	}
}

func (c *stressClient) session(ctx context.Context, hc *http.Client, rng *rand.Rand) {
	url := c.e.liveURL(c.game, c.cursor.Load())
	if c.board {
		url += "&board=1"
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	opts := &websocket.DialOptions{HTTPClient: hc}
	if c.idx%4 < 2 {
		opts.CompressionMode = websocket.CompressionNoContextTakeover // as browsers do
	}
	conn, _, err := websocket.Dial(dctx, url, opts)
	cancel()
	if err != nil {
		return // the server is busy or the test ended: try again
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	c.sessions.Add(1)
	hangUpAt := 50 + rng.IntN(500)
	for n := 0; ; n++ {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			return // dropped (slow) or the test ended
		}
		c.frames++
		var f struct {
			T   string `json:"t"`
			Seq int64  `json:"seq"`
		}
		if typ != websocket.MessageText || json.Unmarshal(b, &f) != nil || f.T == "" {
			c.errs = append(c.errs, fmt.Sprintf("client %d: bad frame %q (%v, %d bytes, frame %d of the session, after seq %d)", c.idx, b, typ, len(b), n, c.cursor.Load()))
			return
		}
		switch f.T {
		case "line":
			if f.Seq <= c.cursor.Load() {
				c.errs = append(c.errs, fmt.Sprintf("client %d: line %d at or below the cursor %d", c.idx, f.Seq, c.cursor.Load()))
			}
			c.cursor.Store(f.Seq)
		case "reset":
			c.errs = append(c.errs, fmt.Sprintf("client %d: reset", c.idx))
		}
		switch r := rng.IntN(200); {
		case r == 0:
			// A reader that stalls (a busy phone): what the server cannot
			// write now it keeps, or drops the client as slow.
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		case r < 3:
			_ = conn.Write(ctx, websocket.MessageText, []byte(`{"t":"probe"}`))
		}
		if n == hangUpAt {
			c.hangups.Add(1)
			return
		}
	}
}

package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/testkit/proctest"
)

// frame is a websocket frame of docs/contracts.md.
type frame struct {
	T    string `json:"t"`
	Seq  int64  `json:"seq"`
	ID   string `json:"id"`
	HTML string `json:"html"`
}

// wsClient follows a game's live feed as the page does and records every
// line frame.
type wsClient struct {
	conn  *websocket.Conn
	after int64
	ids   []string
	seen  map[string]bool
}

func dial(tb testing.TB, r *renderer, game string, after int64, header http.Header) (*websocket.Conn, *http.Response, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	url := fmt.Sprintf("ws://%s/games/%s/live?after=%d", r.addr, game, after)
	if header == nil {
		header = http.Header{"Origin": {"http://" + r.addr}}
	}
	return websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
}

// mustDialSmallBuffer is mustDial from 0 with a 4 KiB socket receive
// buffer, set before the connection is made so that the TCP window stays
// small: a client that stops reading backs the server up sooner.
func mustDialSmallBuffer(tb testing.TB, r *renderer, game string) *wsClient {
	tb.Helper()
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	url := fmt.Sprintf("ws://%s/games/%s/live?after=0", r.addr, game)
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {"http://" + r.addr}},
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}},
	})
	if err != nil {
		tb.Fatalf("dial %s: %v", game, err)
	}
	conn.SetReadLimit(1 << 20)
	tb.Cleanup(func() { conn.CloseNow() })
	return &wsClient{conn: conn, seen: map[string]bool{}}
}

func mustDial(tb testing.TB, r *renderer, game string, after int64) *wsClient {
	tb.Helper()
	conn, _, err := dial(tb, r, game, after, nil)
	if err != nil {
		tb.Fatalf("dial %s: %v", game, err)
	}
	conn.SetReadLimit(1 << 20)
	tb.Cleanup(func() { conn.CloseNow() })
	return &wsClient{conn: conn, after: after, seen: map[string]bool{}}
}

// readUntil reads frames until the client has seen every id in want, or
// fails at the deadline. It returns the read error when the server closed
// the connection first.
func (c *wsClient) readUntil(want []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !c.hasAll(want) {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			return err
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("bad frame %q: %w", b, err)
		}
		if f.T != "line" {
			continue
		}
		if f.Seq <= c.after {
			return fmt.Errorf("frame seq %d not after cursor %d", f.Seq, c.after)
		}
		c.after = f.Seq
		if c.seen[f.ID] {
			return fmt.Errorf("frame for %s delivered twice", f.ID)
		}
		c.seen[f.ID] = true
		c.ids = append(c.ids, f.ID)
	}
	return nil
}

func (c *wsClient) hasAll(want []string) bool {
	for _, id := range want {
		if !c.seen[id] {
			return false
		}
	}
	return true
}

// TestRenderToSubscribeGap: lines committed between the page's read and its
// websocket are delivered (issue 5, proof 6).
func TestRenderToSubscribeGap(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("gap")
	w.chat("ada", "before")
	c.waitStored("gap", w.ids, 10*time.Second)
	resp, err := http.Get(r.url("/games/gap"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	seq := pageSeq(t, string(body))
	before := len(w.ids)
	for i := 0; i < 5; i++ {
		w.chat("bob", fmt.Sprintf("in the gap %d", i))
	}
	c.waitStored("gap", w.ids, 10*time.Second)
	cl := mustDial(t, r, "gap", seq)
	if err := cl.readUntil(w.ids[before:], 5*time.Second); err != nil {
		t.Fatalf("gap lines: %v (got %v)", err, cl.ids)
	}
	for _, id := range cl.ids {
		if id == w.ids[0] {
			t.Fatalf("line rendered in the page was sent again")
		}
	}
}

// TestSlowClient: a client that stops reading is closed; a reading client
// keeps its pace; the slow one resumes from its cursor without a gap
// (issue 5, proof 5).
func TestSlowClient(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("slow")
	w.chat("ada", "hello")
	c.waitStored("slow", w.ids, 10*time.Second)

	slow := mustDialSmallBuffer(t, r, "slow")
	if err := slow.readUntil(w.ids, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	fast := mustDial(t, r, "slow", slow.after)
	// Big lines fill the slow client's socket buffers and send queue fast.
	// How much the kernel buffers on loopback varies from machine to machine
	// (the sender's buffer autotunes up to tcp_wmem's maximum): write until
	// the close, with a deadline, not a fixed number of rounds.
	text := strings.Repeat("🧱", 250)
	var closed error
	deadline := time.Now().Add(2 * time.Minute)
	for round := 0; closed == nil && time.Now().Before(deadline); round++ {
		from := len(w.ids)
		for i := 0; i < 100; i++ {
			w.chat("bob", text)
		}
		if err := fast.readUntil(w.ids[from:], 10*time.Second); err != nil {
			t.Fatalf("fast client fell behind in round %d: %v", round, err)
		}
		closed = probeClosed(r, slow)
	}
	if closed == nil {
		t.Fatalf("slow client was never closed")
	}
	// The slow client reads what was queued, finds the close, resumes.
	err := slow.readUntil(w.ids, 10*time.Second)
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("slow client: want a close frame, got %v", err)
	}
	t.Logf("slow client closed: %v after %d lines", ce, len(slow.ids))
	resumed := mustDial(t, r, "slow", slow.after)
	resumed.seen = slow.seen
	if err := resumed.readUntil(w.ids, 20*time.Second); err != nil {
		t.Fatalf("resume: %v", err)
	}
	c.waitStored("slow", w.ids, 10*time.Second)
}

// probeClosed reports the server's close of a slow client by the metric it
// counts, without reading from the client.
func probeClosed(r *renderer, _ *wsClient) error {
	resp, err := http.Get(r.url("/metrics"))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "codemojex_web_slow_client_closes_total ") && !strings.HasSuffix(line, " 0") {
			return errors.New(line)
		}
	}
	return nil
}

// TestOriginRejected: a websocket from a foreign origin is refused
// (issue 5, proof 7).
func TestOriginRejected(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	_, resp, err := dial(t, r, "any", 0, http.Header{"Origin": {"http://evil.example"}})
	if err == nil {
		t.Fatal("foreign origin accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: resp=%v err=%v; want 403", resp, err)
	}
	// The same host is accepted.
	conn, _, err := dial(t, r, "any", 0, nil)
	if err != nil {
		t.Fatalf("same origin refused: %v", err)
	}
	conn.CloseNow()
}

// TestStatusShowsDeadConsumer: /api/status, /status and its fragment show a dead
// consumer's pending entries, then their reclaim (issue 5, proof 8).
func TestStatusShowsDeadConsumer(t *testing.T) {
	c := newCluster(t)
	w := c.writer("status")
	for i := 0; i < 5; i++ {
		w.chat("ada", fmt.Sprintf("m%d", i))
	}
	// A consumer takes the entries and dies without acking them.
	ctx := context.Background()
	const key = "codemojex:{status}:events"
	if err := c.rdb.XGroupCreateMkStream(ctx, key, c.group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := c.rdb.XReadGroup(ctx, &redisXReadGroupArgs{Group: c.group, Consumer: "ghost", Streams: []string{key, ">"}, Count: 100}).Result()
	if err != nil || len(got) != 1 || len(got[0].Messages) != 5 {
		t.Fatalf("ghost read %v, %v; want its 5 entries", got, err)
	}
	var ids []string
	for _, m := range got[0].Messages {
		ids = append(ids, m.ID)
	}
	// Until the status has shown them, ghost's entries are kept young
	// (XCLAIM to ghost itself, JUSTID: no delivery counted), as a live
	// handler's are: a renderer slow to start on a loaded host would
	// otherwise reclaim them, after -min-idle, before the first look.
	// Ghost holds no lease, so it is dead all the same.
	young, stopYoung := context.WithCancel(ctx)
	keptYoung := make(chan struct{})
	go func() {
		defer close(keptYoung)
		for {
			c.rdb.XClaimJustID(young, &redisXClaimArgs{Stream: key, Group: c.group, Consumer: "ghost", MinIdle: 0, Messages: ids})
			select {
			case <-young.Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	defer stopYoung()
	r := c.start("r1", "-min-idle", "3s")
	pending := func() (int64, bool) {
		resp, err := http.Get(r.url("/api/status"))
		if err != nil {
			return -1, false
		}
		defer resp.Body.Close()
		var st struct {
			Streams []struct {
				Game      string `json:"game"`
				Pending   int64  `json:"pending"`
				Consumers []struct {
					Name    string `json:"name"`
					Pending int64  `json:"pending"`
				} `json:"consumers"`
			} `json:"streams"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return -1, false
		}
		for _, s := range st.Streams {
			if s.Game != "status" {
				continue
			}
			for _, cs := range s.Consumers {
				if cs.Name == "ghost" {
					return cs.Pending, true
				}
			}
		}
		return 0, false
	}
	proctest.WaitFor(t, 10*time.Second, func() bool { n, ok := pending(); return ok && n == 5 }, "status to show ghost with 5 pending")
	// The page and the fragment its script polls are one rendering.
	for _, path := range []string{"/status", "/fragments/status"} {
		resp, err := http.Get(r.url(path))
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `class="chip dead"`) || !strings.Contains(string(page), "ghost") {
			t.Fatalf("%s (%d) does not name the dead consumer", path, resp.StatusCode)
		}
	}
	stopYoung()
	<-keptYoung
	c.waitStored("status", w.ids, 20*time.Second)
	proctest.WaitFor(t, 10*time.Second, func() bool { n, _ := pending(); return n == 0 }, "ghost's entries reclaimed")
}

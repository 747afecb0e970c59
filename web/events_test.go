package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/boardpatch"
	"github.com/codemojex/feed/web"
)

// sseEvent is one server-sent event as a client parses it.
type sseEvent struct {
	name string // the event's type: "" for a frame, "ping" for a ping
	id   string
	data string
}

// sseClient reads a real event stream of the server.
type sseClient struct {
	tb     testing.TB
	resp   *http.Response
	cancel context.CancelFunc
	events chan sseEvent
	err    chan error // the stream's end: io.EOF, or what broke it
	panel  string
}

// streamURL is the events URL of game after the cursor, asking for board
// frames as the page script does.
func (e *env) streamURL(game string, after int64) string {
	return e.url("/games/" + game + "/events?after=" + strconv.FormatInt(after, 10) + "&board=1")
}

// openStream opens url with the headers in hdr (name, value pairs) and
// returns the response, unread unless it is an event stream.
func (e *env) openStream(url string, hdr ...string) (*sseClient, *http.Response) {
	e.tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		e.tb.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.tb.Fatalf("GET %s: %v", url, err)
	}
	e.tb.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return nil, resp
	}
	c := &sseClient{tb: e.tb, resp: resp, cancel: cancel, events: make(chan sseEvent, 4096), err: make(chan error, 1)}
	go c.read()
	return c, resp
}

// stream opens an event stream on game after the cursor.
func (e *env) stream(game string, after int64, hdr ...string) *sseClient {
	e.tb.Helper()
	c, resp := e.openStream(e.streamURL(game, after), hdr...)
	if c == nil {
		b, _ := io.ReadAll(resp.Body)
		e.tb.Fatalf("stream %s after %d: HTTP %d: %s", game, after, resp.StatusCode, b)
	}
	return c
}

// read hands the stream's events to c.events until it ends.
func (c *sseClient) read() {
	err := parseEvents(c.resp.Body, func(ev sseEvent) { c.events <- ev })
	c.err <- err
	close(c.events)
}

// parseEvents parses a stream as the EventSource algorithm does: lines end
// in LF, CRLF or CR; "field: value" (one space after the colon dropped); a
// blank line ends an event; a line starting with ':' is a comment. It
// returns the reader's error (io.EOF at a clean end).
func parseEvents(r io.Reader, fn func(sseEvent)) error {
	br := bufio.NewReader(r)
	var ev sseEvent
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		// A CR alone ends a line too: the encoder splits on it, so here it
		// can only be the CR of a CRLF, or of lines ended by CR alone.
		for _, l := range strings.Split(strings.ReplaceAll(line, "\r\n", "\r"), "\r") {
			switch {
			case l == "":
				if data != nil {
					ev.data = strings.Join(data, "\n")
					fn(ev)
				}
				ev, data = sseEvent{}, nil
			case strings.HasPrefix(l, ":"):
			default:
				field, value, _ := strings.Cut(l, ":")
				value = strings.TrimPrefix(value, " ")
				switch field {
				case "event":
					ev.name = value
				case "id":
					ev.id = value
				case "data":
					data = append(data, value)
				}
			}
		}
	}
}

// next returns the next frame but watching frames, with the event's id.
func (c *sseClient) next() (wireFrame, string) {
	c.tb.Helper()
	for {
		f, id, err := c.readAny(5 * time.Second)
		if err != nil {
			c.tb.Fatalf("read event: %v", err)
		}
		if f.T != "watching" {
			return f, id
		}
	}
}

// readAny returns the next frame, board frames applied as readAny of a
// websocket does, or the stream's end. Pings are passed over: they are no
// frames, and an EventSource's onmessage never sees them.
func (c *sseClient) readAny(timeout time.Duration) (wireFrame, string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return wireFrame{}, "", <-c.err
			}
			if ev.name == "ping" {
				continue
			}
			var f wireFrame
			if err := json.Unmarshal([]byte(ev.data), &f); err != nil {
				return wireFrame{}, "", fmt.Errorf("event data %q: %w", ev.data, err)
			}
			switch f.T {
			case "board":
				html, err := boardpatch.Apply(c.panel, f.HTML)
				if err != nil {
					return wireFrame{}, "", err
				}
				f.T, f.HTML = "state", html
				fallthrough
			case "state":
				c.panel = f.HTML
			}
			return f, ev.id, nil
		case <-t.C:
			return wireFrame{}, "", errors.New("no event within " + timeout.String())
		}
	}
}

// lines reads n line frames, skipping state frames, and checks each
// event's id is its seq.
func (c *sseClient) lines(n int) []wireFrame {
	c.tb.Helper()
	var out []wireFrame
	for len(out) < n {
		f, id := c.next()
		if f.T != "line" {
			continue
		}
		if id != strconv.FormatInt(f.Seq, 10) {
			c.tb.Fatalf("line seq %d came with event id %q", f.Seq, id)
		}
		out = append(out, f)
	}
	return out
}

// ended waits for the stream to end and returns the frames before it.
func (c *sseClient) ended(timeout time.Duration) ([]wireFrame, error) {
	c.tb.Helper()
	var out []wireFrame
	deadline := time.Now().Add(timeout)
	for {
		f, _, err := c.readAny(time.Until(deadline))
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "closed") {
				return out, nil
			}
			return out, err
		}
		out = append(out, f)
	}
}

func TestEventsBackfillThenLive(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g, other := e.gen("g1"), e.gen("other")
	first := g.chats(t, 5)
	e.upsert(first[:2]...)
	e.upsert(other.chats(t, 3)...)
	e.upsert(first[2:]...)

	s := e.stream("g1", 0)
	if ct := s.resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	if f, id := s.next(); f.T != "state" || id != "" || !strings.Contains(f.HTML, `id="scoreboard"`) {
		t.Fatalf("first frame %+v (id %q), want the scoreboard state without an id", f, id)
	}
	got := s.lines(5)
	if !eq(ids(got), evtIDs(first)) {
		t.Fatalf("backfill ids %v, want %v", ids(got), evtIDs(first))
	}
	waitFor(t, 5*time.Second, "the stream counted", func() bool { return e.srv.Stats().EventStreams == 1 })
	if n := e.srv.Watching()["g1"]; n != 1 {
		t.Fatalf("watching g1 = %d, want 1 (the stream)", n)
	}

	live := g.chats(t, 3)
	e.upsert(other.chats(t, 2)...)
	e.upsert(live...)
	if got := s.lines(3); !eq(ids(got), evtIDs(live)) {
		t.Fatalf("live ids %v, want %v", ids(got), evtIDs(live))
	}
	e.upsert(g.ev(t, event.KindPlayerJoined, "player", "grace", "avatar", "🦊"))
	s.lines(1)
	if f, _ := s.next(); f.T != "state" || !strings.Contains(f.HTML, "grace") {
		t.Fatalf("got %+v, want the panel with the new player", f)
	}

	s.cancel()
	waitFor(t, 5*time.Second, "the stream to end on the server", func() bool {
		st := e.srv.Stats()
		return st.EventStreams == 0 && e.srv.Watching()["g1"] == 0
	})
}

// An EventSource that reconnects by itself sends the last event id it saw:
// the stream resumes after it, whatever the URL's cursor says.
func TestEventsResumeFromLastEventID(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	a := g.chats(t, 4)
	e.upsert(a...)
	s := e.stream("g1", 0)
	got := s.lines(4)
	s.cancel()

	b := g.chats(t, 3)
	e.upsert(b...)
	r := e.stream("g1", 0, "Last-Event-ID", strconv.FormatInt(got[1].Seq, 10))
	want := append(evtIDs(a[2:]), evtIDs(b)...)
	if got := r.lines(5); !eq(ids(got), want) {
		t.Fatalf("resumed ids %v, want %v", ids(got), want)
	}
	if f, _, err := r.readAny(300 * time.Millisecond); err == nil && f.T == "line" {
		t.Fatalf("a line past the end: %+v", f)
	}
}

func TestEventsReset(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after int64
		store string
	}{
		{"cursor ahead of the store", 99, ""},
		{"cursor of another store", 0, "host-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.StoreID = "host-a" })
			e.upsert(e.gen("g1").chats(t, 2)...)
			url := e.streamURL("g1", tc.after)
			if tc.store != "" {
				url += "&store=" + tc.store
			}
			s, resp := e.openStream(url)
			if s == nil {
				t.Fatalf("HTTP %d, want the stream", resp.StatusCode)
			}
			frames, err := s.ended(5 * time.Second)
			if err != nil {
				t.Fatalf("stream did not end: %v (frames %+v)", err, frames)
			}
			var last wireFrame
			for _, f := range frames {
				if f.T != "watching" {
					last = f
				}
			}
			if last.T != "reset" {
				t.Fatalf("frames %+v, want the stream to end with a reset", frames)
			}
			if n := e.srv.Stats().Resets; n != 1 {
				t.Fatalf("resets %d, want 1", n)
			}
		})
	}
}

// A stream is refused as a websocket would be: a bad cursor, another
// site's Origin, a foreign Host, and a client over its cap of live
// connections, which websockets and streams share.
func TestEventsRefused(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.MaxSocketsPerClient = 1 })
	e.upsert(e.gen("g1").chats(t, 1)...)
	for _, tc := range []struct {
		name string
		url  string
		hdr  []string
		code int
	}{
		{"no cursor", e.url("/games/g1/events"), nil, http.StatusBadRequest},
		{"negative cursor", e.url("/games/g1/events?after=-1"), nil, http.StatusBadRequest},
		{"bad Last-Event-ID", e.streamURL("g1", 0), []string{"Last-Event-ID", "evt_x"}, http.StatusBadRequest},
		{"bad game", e.url("/games/no%20such/events?after=0"), nil, http.StatusNotFound},
		{"foreign origin", e.streamURL("g1", 0), []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"another site's no-cors request", e.streamURL("g1", 0), []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"foreign host", e.streamURL("g1", 0), []string{"Host", "evil.example"}, http.StatusMisdirectedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, resp := e.openStream(tc.url, tc.hdr...)
			if s != nil || resp.StatusCode != tc.code {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, tc.code)
			}
		})
	}
	if n := e.srv.Stats().EventStreams; n != 0 {
		t.Fatalf("%d streams open after refusals", n)
	}

	// The same site's page passes the Origin check, with its Origin or
	// (a same-origin GET) without.
	s := e.stream("g1", 0, "Sec-Fetch-Site", "same-origin")
	s.lines(1)
	s.cancel()
	waitFor(t, 5*time.Second, "the stream closed", func() bool { return e.srv.Stats().EventStreams == 0 })
	s = e.stream("g1", 0, "Origin", "http://"+e.srv.Addr())
	s.lines(1)
	_, resp := e.openStream(e.streamURL("g1", 0))
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second stream from one address: HTTP %d, want 429", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, e.wsURL("g1", 0), nil); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a websocket beside the stream: %v, want 429", err)
	}
}

// A stream carries a ping event, "event: ping" with the period in
// milliseconds as its data and no id, before its first frame and every
// PingEvery after, however quiet the game: the page learns the period from
// the first and drops a stream that brings nothing for about two periods
// (docs/live-page.md). A comment, which it was, never reaches a script.
func TestEventsPing(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PingEvery = 150 * time.Millisecond })
	s := e.stream("g1", 0)
	isPing := func(ev sseEvent) bool { return ev.name == "ping" && ev.data == "150" && ev.id == "" }
	next := func() sseEvent {
		t.Helper()
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended: %v", <-s.err)
			}
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5s")
		}
		return sseEvent{}
	}
	if ev := next(); !isPing(ev) {
		t.Fatalf("first event %+v, want a ping of 150 ms before any frame", ev)
	}
	for pings := 0; pings < 3; {
		ev := next()
		switch {
		case isPing(ev):
			pings++
		case ev.name != "":
			t.Fatalf("event %+v, want a frame or a ping of 150 ms", ev)
		}
	}
}

// The server's whole-request read limit does not end a stream.
func TestEventsOutliveReadTimeout(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.ReadTimeout = 200 * time.Millisecond })
	g := e.gen("g1")
	s := e.stream("g1", 0)
	s.next()
	time.Sleep(600 * time.Millisecond) // the window under test: three read timeouts
	live := g.chats(t, 2)
	e.upsert(live...)
	if got := s.lines(2); !eq(ids(got), evtIDs(live)) {
		t.Fatalf("ids %v, want %v", ids(got), evtIDs(live))
	}
}

// silentStream asks for game's stream on a raw connection with a tiny
// receive buffer and never reads it: the server's writes stall after a few
// frames.
func (e *env) silentStream(game string) net.Conn {
	e.tb.Helper()
	c, err := smallBufferDialer().Dial("tcp", e.srv.Addr())
	if err != nil {
		e.tb.Fatal(err)
	}
	e.tb.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /games/%s/events?after=0 HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", game, e.srv.Addr())
	return c
}

// A client that stops reading is closed as slow, and its stream is gone
// from the counts; the renderer and other clients go on.
func TestEventsSlowClientClosed(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.SendQueue = 8
		c.WriteTimeout = 500 * time.Millisecond
	})
	g := e.gen("g1")
	reader := e.stream("g1", 0)
	reader.next()
	e.silentStream("g1")
	waitFor(t, 5*time.Second, "both streams open", func() bool { return e.srv.Stats().EventStreams == 2 })
	// One line at a time, each read by the reader before the next: its
	// queue never fills, the silent one's does (or its write stalls).
	for i, ev := range g.bigChats(t, 200, 16<<10) {
		e.upsert(ev)
		if got := reader.lines(1); got[0].ID != ev.EvtID {
			t.Fatalf("line %d: the reader got %s, want %s", i, got[0].ID, ev.EvtID)
		}
		if e.srv.Stats().SlowCloses == 1 {
			break
		}
	}
	waitFor(t, 10*time.Second, "the silent stream closed as slow", func() bool {
		st := e.srv.Stats()
		return st.SlowCloses == 1 && st.EventStreams == 1
	})
}

// smallSendBufferListener listens on a free loopback port and gives each
// connection it accepts a tiny send buffer (the kernel's least). With a
// client that reads nothing (silentStream), a few KiB back the server up,
// not the megabytes loopback allows: pings alone fill it. The connections
// are returned as accepted, *net.TCPConn, which the nbio engine takes over.
func smallSendBufferListener(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return smallSendBuffer{ln}
}

type smallSendBuffer struct{ net.Listener }

func (l smallSendBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetWriteBuffer(1); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, err
}

// TestEventsStuckPingIsSlow: a stream whose client stopped reading on a
// quiet game ends when a ping makes no progress for WriteTimeout, and is
// counted in SlowCloses (codemojex_web_slow_client_closes_total) on both
// engines. Only pings fill its socket: the game has no line. The std engine
// ended the stream uncounted (SlowCloses 0); the nbio engine's sweep
// counted it.
func TestEventsStuckPingIsSlow(t *testing.T) {
	for _, engine := range []string{web.WSEngineStd, web.WSEngineNbio} {
		t.Run(engine, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) {
				c.WSEngine = engine
				c.Listener = smallSendBufferListener(t)
				// The nbio engine pings at its sweep, every WriteTimeout/4
				// (10 ms at least): a short timeout fills the socket sooner.
				c.WriteTimeout = 40 * time.Millisecond
				c.PingEvery = time.Millisecond
			})
			e.silentStream("g1")
			// Its state frame is counted once the stream is open and counted
			// itself, however soon after its pings stick.
			waitFor(t, 5*time.Second, "the stream's state frame sent", func() bool { return e.srv.Stats().FramesSent >= 1 })
			waitFor(t, 60*time.Second, "the stream with its pings stuck ended", func() bool { return e.srv.Stats().EventStreams == 0 })
			if st := e.srv.Stats(); st.SlowCloses != 1 {
				t.Fatalf("SlowCloses %d after the stuck ping ended the stream, want 1", st.SlowCloses)
			}
		})
	}
}

// Close ends every stream at once: the clients reconnect elsewhere.
func TestEventsEndOnClose(t *testing.T) {
	e := MustOpenEnv(t, nil)
	s := e.stream("g1", 0)
	s.next()
	start := time.Now()
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("Close took %v with a stream open", d)
	}
	if _, err := s.ended(5 * time.Second); err != nil {
		t.Fatalf("stream after Close: %v", err)
	}
}

func TestEncodeEvent(t *testing.T) {
	for _, tc := range []struct {
		seq  int64
		data string
		want string
	}{
		{0, `{"t":"state"}`, "data: {\"t\":\"state\"}\n\n"},
		{42, `{"t":"line"}`, "id: 42\ndata: {\"t\":\"line\"}\n\n"},
		{0, "a\nb", "data: a\ndata: b\n\n"},
		{0, "a\r\nb\rc", "data: a\ndata: b\ndata: c\n\n"},
		{0, "a\n", "data: a\ndata: \n\n"},
		{0, "", "data: \n\n"},
	} {
		if got := string(web.EncodeEvent(tc.seq, []byte(tc.data))); got != tc.want {
			t.Errorf("EncodeEvent(%d, %q) = %q, want %q", tc.seq, tc.data, got, tc.want)
		}
	}
}

// What a client parses out of an event is the frame's data, its line breaks
// as LF, with the line's seq as id.
func FuzzEncodeEvent(f *testing.F) {
	f.Add(int64(0), []byte(`{"t":"state","html":"<aside>"}`))
	f.Add(int64(7), []byte(`{"t":"line"}`))
	f.Add(int64(0), []byte("a\r\nb\rc\n"))
	f.Add(int64(1), []byte(" data: \n\n: x"))
	f.Fuzz(func(t *testing.T, seq int64, data []byte) {
		if seq < 0 {
			seq = -seq
		}
		var got []sseEvent
		if err := parseEvents(bytes.NewReader(web.EncodeEvent(seq, data)), func(ev sseEvent) { got = append(got, ev) }); err != io.EOF {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
		if len(got) != 1 || got[0].data != want {
			t.Fatalf("parsed %+v, want one event with data %q", got, want)
		}
		if id := got[0].id; (seq == 0 && id != "") || (seq != 0 && id != strconv.FormatInt(seq, 10)) {
			t.Fatalf("id %q for seq %d", id, seq)
		}
	})
}

// TestEventsResetOtherNumbering: an event stream's cursor is checked
// against the line the client holds last, as a websocket's is; but not when
// the cursor is Last-Event-ID, since an EventSource that reconnects by
// itself repeats the URL, and its last, from when it was opened.
func TestEventsResetOtherNumbering(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	evs := g.chats(t, 2)
	e.upsert(evs...)
	max, err := e.db.MaxSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, resp := e.openStream(e.streamURL("g1", max) + "&last=" + evs[0].EvtID)
	if s == nil {
		t.Fatalf("HTTP %d, want the stream", resp.StatusCode)
	}
	frames, err := s.ended(5 * time.Second)
	if err != nil {
		t.Fatalf("stream did not end: %v (frames %+v)", err, frames)
	}
	if n := len(frames); n == 0 || frames[n-1].T != "reset" {
		t.Fatalf("frames %+v, want the stream to end with a reset", frames)
	}

	s, resp = e.openStream(e.streamURL("g1", 0)+"&last="+evs[0].EvtID, "Last-Event-ID", strconv.FormatInt(max, 10))
	if s == nil {
		t.Fatalf("HTTP %d, want the stream", resp.StatusCode)
	}
	next := g.chats(t, 1)
	e.upsert(next...)
	if got := s.lines(1); got[0].ID != next[0].EvtID {
		t.Fatalf("resumed from Last-Event-ID with line %s, want %s", got[0].ID, next[0].EvtID)
	}
}

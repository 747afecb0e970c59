package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/boardpatch"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
	"github.com/codemojex/feed/web"
)

// waitFor is wait.For: poll a condition with a deadline.
var waitFor = wait.For

// MustOpenStore opens a real store in a temporary directory.
func MustOpenStore(tb testing.TB) *store.DB {
	tb.Helper()
	return mustOpenStoreAt(tb, filepath.Join(tb.TempDir(), "feed.db"))
}

func mustOpenStoreAt(tb testing.TB, path string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// env is a real store with a web server on a free port and its doorbell.
type env struct {
	tb     testing.TB
	db     *store.DB
	dbPath string
	srv    *web.Server
	bell   chan struct{}
	gens   map[string]*gen
	cfg    web.Config
}

// MustOpenEnv starts a server over a fresh store; mod adjusts the config.
func MustOpenEnv(tb testing.TB, mod func(*web.Config)) *env {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "feed.db")
	e := &env{tb: tb, db: mustOpenStoreAt(tb, path), dbPath: path, bell: make(chan struct{}, 1), gens: map[string]*gen{}}
	cfg := web.Config{
		Addr:     "127.0.0.1:0",
		Store:    e.db,
		Doorbell: e.bell,
		Logger:   testLogger(),
		// The same tests run on either websocket engine.
		WSEngine: os.Getenv("CODEMOJEX_WS_ENGINE"),
	}
	if mod != nil {
		mod(&cfg)
	}
	e.cfg = cfg
	e.start()
	return e
}

func (e *env) start() {
	e.tb.Helper()
	srv, err := web.Open(e.cfg)
	if err != nil {
		e.tb.Fatalf("open web: %v", err)
	}
	e.tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			e.tb.Errorf("close web: %v", err)
		}
	})
	e.srv = srv
}

// gen mints events of one game, with bodies from the real line renderer.
type gen struct {
	game  string
	m     *event.Minter
	proto store.Event // bigGame's model line
}

func (e *env) gen(game string) *gen {
	g, ok := e.gens[game]
	if !ok {
		g = &gen{game: game, m: event.NewMinter(int64(len(e.gens) + 1))}
		e.gens[game] = g
	}
	return g
}

// ev builds one event of kind with field name/value pairs.
func (g *gen) ev(tb testing.TB, kind string, kv ...string) store.Event {
	tb.Helper()
	at := time.Now().UTC().Truncate(time.Second)
	p := map[string]string{"kind": kind, "at": at.Format(time.RFC3339)}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	html, err := templates.RenderLine(kind, p, at)
	if err != nil {
		tb.Fatalf("render %s: %v", kind, err)
	}
	return store.Event{
		EvtID: g.m.Next(time.Now()), Game: g.game, Kind: kind, Payload: p, HTML: html,
		StreamID: "0-1", Renderer: "test", Attempts: 1, At: at,
	}
}

// chats builds n chat events.
func (g *gen) chats(tb testing.TB, n int) []store.Event {
	tb.Helper()
	evs := make([]store.Event, n)
	for i := range evs {
		evs[i] = g.ev(tb, event.KindChat, "player", "ada", "text", fmt.Sprintf("message %d", i))
	}
	return evs
}

// upsert stores events, each of which must be new, and rings the doorbell.
// It returns their seqs.
func (e *env) upsert(evs ...store.Event) []int64 {
	e.tb.Helper()
	res, err := e.db.Upsert(context.Background(), evs)
	if err != nil {
		e.tb.Fatalf("upsert: %v", err)
	}
	seqs := make([]int64, len(res))
	for i, r := range res {
		if r.Err != nil || !r.Inserted {
			e.tb.Fatalf("upsert %s: inserted=%v err=%v", evs[i].EvtID, r.Inserted, r.Err)
		}
		seqs[i] = r.Seq
	}
	e.ring()
	return seqs
}

func (e *env) ring() {
	select {
	case e.bell <- struct{}{}:
	default:
	}
}

func (e *env) url(path string) string { return e.srv.URL() + path }

// wsURL is the live URL of game after the cursor, asking for board frames
// as the page script does; liveURL does not ask.
func (e *env) wsURL(game string, after int64) string { return e.liveURL(game, after) + "&board=1" }

func (e *env) liveURL(game string, after int64) string {
	return "ws://" + e.srv.Addr() + "/games/" + game + "/live?after=" + strconv.FormatInt(after, 10)
}

// get fetches path and returns the response with its body read.
func (e *env) get(path string, hdr ...string) (*http.Response, string) {
	e.tb.Helper()
	resp := e.do(http.MethodGet, path, hdr...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.tb.Fatalf("GET %s: read: %v", path, err)
	}
	return resp, string(b)
}

// send makes a request and returns the response with the head of its
// body: one read of up to 4 KiB, enough for an error's text, and what an
// event stream, which never ends, has sent first; nothing for a HEAD.
func (e *env) send(method, path string, hdr ...string) (*http.Response, string) {
	e.tb.Helper()
	resp := e.do(method, path, hdr...)
	defer resp.Body.Close()
	if method == http.MethodHead {
		return resp, ""
	}
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	return resp, string(buf[:n])
}

// do makes a request with the header fields hdr (name, value, …; a Host
// one sets the request's host) and returns the response, its body unread.
func (e *env) do(method, path string, hdr ...string) *http.Response {
	e.tb.Helper()
	req, err := http.NewRequest(method, e.url(path), nil)
	if err != nil {
		e.tb.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1] // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.tb.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// wireFrame is a decoded websocket frame.
type wireFrame struct {
	T    string `json:"t"`
	Seq  int64  `json:"seq"`
	ID   string `json:"id"`
	HTML string `json:"html"`
	N    int    `json:"n"`

	// Patch is set on a board frame, which readAny hands on as the state
	// frame it adds up to: its HTML the whole panel the page would show.
	Patch bool `json:"-"`
}

// wsClient is a real websocket client of the server.
type wsClient struct {
	tb    testing.TB
	c     *websocket.Conn
	panel string // the scoreboard panel its frames add up to
}

// dial opens a websocket on game after the cursor, asking for board frames
// as the page script does.
func (e *env) dial(game string, after int64) *wsClient {
	e.tb.Helper()
	return e.dialURL(game, after, e.wsURL(game, after))
}

// dialWhole is dial for a client that does not ask for board frames.
func (e *env) dialWhole(game string, after int64) *wsClient {
	e.tb.Helper()
	return e.dialURL(game, after, e.liveURL(game, after))
}

func (e *env) dialURL(game string, after int64, url string, hdr ...string) *wsClient {
	e.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		e.tb.Fatalf("dial %s after %d: %v (HTTP %d)", game, after, err, code)
	}
	c.SetReadLimit(1 << 20)
	e.tb.Cleanup(func() { c.CloseNow() })
	return &wsClient{tb: e.tb, c: c}
}

// read returns the next frame but watching frames (they come whenever a
// viewer count moves; readAny sees them), or the read error.
func (w *wsClient) read(timeout time.Duration) (wireFrame, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, err := w.readAny(time.Until(deadline))
		if errors.Is(err, net.ErrClosed) && !time.Now().Before(deadline) {
			// coder/websocket closes the connection when a read's context
			// ends; a watching frame read just as the deadline passed
			// leaves the next read that closed connection, not the
			// deadline.
			err = context.DeadlineExceeded
		}
		if err != nil || f.T != "watching" {
			return f, err
		}
	}
}

// readAny returns the next frame or the read error. A board frame comes
// as the state frame it adds up to (wireFrame.Patch).
func (w *wsClient) readAny(timeout time.Duration) (wireFrame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	typ, b, err := w.c.Read(ctx)
	if err != nil {
		return wireFrame{}, err
	}
	if typ != websocket.MessageText {
		return wireFrame{}, fmt.Errorf("frame type %v, want text", typ)
	}
	var f wireFrame
	if err := json.Unmarshal(b, &f); err != nil {
		return wireFrame{}, fmt.Errorf("frame %q: %w", b, err)
	}
	switch f.T {
	case "board":
		html, err := boardpatch.Apply(w.panel, f.HTML)
		if err != nil {
			return wireFrame{}, fmt.Errorf("board frame on top of %q: %w", w.panel, err)
		}
		f.T, f.HTML, f.Patch = "state", html, true
		fallthrough
	case "state":
		w.panel = f.HTML
	}
	return f, nil
}

func (w *wsClient) next() wireFrame {
	w.tb.Helper()
	f, err := w.read(5 * time.Second)
	if err != nil {
		w.tb.Fatalf("read frame: %v", err)
	}
	return f
}

// lines reads frames until n line frames arrived, skipping state frames.
func (w *wsClient) lines(n int) []wireFrame {
	w.tb.Helper()
	var out []wireFrame
	for len(out) < n {
		f := w.next()
		switch f.T {
		case "line":
			out = append(out, f)
		case "state", "watching":
		default:
			w.tb.Fatalf("frame %+v after %d lines, want line", f, len(out))
		}
	}
	return out
}

// quiet asserts no line frame arrives within d (state frames may). The
// client is closed afterwards (coder/websocket closes a connection whose
// read times out), so quiet is a test's last word on a client.
func (w *wsClient) quiet(d time.Duration) {
	w.tb.Helper()
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		f, err := w.read(left)
		if errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if err != nil {
			w.tb.Fatalf("read: %v", err)
		}
		if f.T != "state" {
			w.tb.Fatalf("unexpected frame %+v", f)
		}
	}
}

func ids(fs []wireFrame) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func evtIDs(evs []store.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.EvtID
	}
	return out
}

var (
	liRe      = regexp.MustCompile(`<li id="(evt_[0-9A-Z]{26})" data-seq="(\d+)"`)
	pageSeqRe = regexp.MustCompile(`id="game"[^>]*data-seq="(\d+)"`)
)

// pageLines returns the EVT ids of the <li> lines in an HTML page, in order.
func pageLines(html string) []string {
	var out []string
	for _, m := range liRe.FindAllStringSubmatch(html, -1) {
		out = append(out, m[1])
	}
	return out
}

func pageSeq(tb testing.TB, html string) int64 {
	tb.Helper()
	m := pageSeqRe.FindStringSubmatch(html)
	if m == nil {
		tb.Fatalf("no data-seq on #game in page")
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func eq(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func testLogger() *slog.Logger {
	if os.Getenv("WEB_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

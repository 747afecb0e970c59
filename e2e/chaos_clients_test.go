package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/testkit/boardpatch"
)

// chaosClient follows one game's live feed as the page does: it loads the
// game page (and its older lines) to learn the store and its seq, records
// every line frame, keeps the highest seq seen as its cursor and, when
// dropped, reconnects from it (naming its store) with backoff and jitter,
// to its home replica first, then to the others. A reset frame makes it
// reload, as the page does; one is a failure unless the store was lost.
type chaosClient struct {
	idx   int
	game  string
	home  int
	addrs []string
	local net.IP // its own loopback address: one browser, one address
	wires wireTails
	errs  *errorList
	lost  *atomic.Bool // the store file was deleted: resets are expected

	mu                                             sync.Mutex
	cursor                                         int64
	store                                          string           // the store's id; "" until (re)loaded
	seen                                           map[string]int64 // EVT id → seq: the page's dedupe by id
	conns, drops, dialFails, lines, states, resets int
	boardFrames, reloads, streamConns              int
	panel                                          string // the scoreboard this socket's frames add up to
	doubled                                        int    // lines received at or below the cursor, or twice
}

// chaosClients are the run's clients: websockets, and a third of them on
// the event stream (chaosClient.streams).
type chaosClients struct {
	all  []*chaosClient
	wg   sync.WaitGroup
	errs errorList
}

func startChaosClients(ctx context.Context, p chaosPlan, games []string, addrs []string, lost *atomic.Bool) *chaosClients {
	cs := &chaosClients{}
	for i := range p.clients {
		cl := &chaosClient{
			idx: i, game: games[i%len(games)], home: i % len(addrs), addrs: addrs,
			local: net.IPv4(127, 0, byte(1+i/200), byte(10+i%200)),
			errs:  &cs.errs, lost: lost, seen: map[string]int64{},
		}
		cs.all = append(cs.all, cl)
		cs.wg.Add(1)
		go func() { defer cs.wg.Done(); cl.run(ctx) }()
	}
	return cs
}

func (cs *chaosClients) wait() { cs.wg.Wait() }

// run connects and reads until ctx ends.
func (cl *chaosClient) run(ctx context.Context) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: cl.wires.dialer((&net.Dialer{LocalAddr: &net.TCPAddr{IP: cl.local}, Timeout: 2 * time.Second}).DialContext),
	}}
	rng := rand.New(rand.NewPCG(uint64(cl.idx), 0x636c69656e74))
	backoff := 100 * time.Millisecond
	for attempt := 0; ctx.Err() == nil; attempt++ {
		addr := cl.addrs[(cl.home+attempt)%len(cl.addrs)]
		if cl.session(ctx, hc, addr) {
			attempt, backoff = -1, 100*time.Millisecond
		}
		if ctx.Err() != nil {
			return
		}
		// Full jitter, capped: pacing of reconnects, as the page does it.
		wait := time.NewTimer(time.Duration(rng.Int64N(int64(backoff)) + 1))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// session dials addr from the cursor and reads frames until the socket
// ends; it reports whether the dial succeeded.
func (cl *chaosClient) session(ctx context.Context, hc *http.Client, addr string) bool {
	cl.mu.Lock()
	after, store := cl.cursor, cl.store
	cl.mu.Unlock()
	if store == "" {
		var err error
		if after, store, err = cl.reload(ctx, hc, addr); err != nil {
			cl.mu.Lock()
			cl.dialFails++
			cl.mu.Unlock()
			return false
		}
	}
	if cl.streams() {
		return cl.stream(ctx, hc, addr, after, store)
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	url := fmt.Sprintf("ws://%s/games/%s/live?after=%d&store=%s", addr, cl.game, after, store)
	if cl.boards() {
		url += "&board=1"
	}
	opts := &websocket.DialOptions{HTTPClient: hc, HTTPHeader: http.Header{"Origin": {"http://" + addr}}}
	if cl.idx%4 < 2 {
		// Half take compressed frames, as browsers do (permessage-deflate).
		opts.CompressionMode = websocket.CompressionNoContextTakeover
	}
	conn, _, err := websocket.Dial(dctx, url, opts)
	cancel()
	if err != nil {
		cl.mu.Lock()
		cl.dialFails++
		cl.mu.Unlock()
		return false
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	cl.mu.Lock()
	cl.conns++
	cl.panel = "" // a new socket starts with a whole panel
	cl.mu.Unlock()
	for n := 0; ; n++ {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			cl.mu.Lock()
			cl.drops++
			cl.mu.Unlock()
			return true
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			cl.mu.Lock()
			cursor := cl.cursor
			cl.mu.Unlock()
			// Where in the session, after which line and how it sat on the
			// wire, for the next look: an empty message and a truncated one
			// were each seen once (docs/benchmarks-journal.md, 1 and 3 Dec
			// 2026). Then the client resumes from its cursor, as the page
			// does, so that a line the bad frame held is not lost.
			cl.errs.add("client %d (%s) on %s: bad frame %q (%v, %d bytes; frame %d of the session, after seq %d from %d): %v; %s",
				cl.idx, cl.game, addr, b, typ, len(b), n, cursor, after, err, cl.wires.around(b))
			return true
		}
		cl.frame(addr, f)
		if f.T == "reset" {
			return true
		}
	}
}

// boards reports whether the client asks for board frames (board=1), as
// the page script does. Half of them do; the others stand for clients
// written to the contract before board frames, which must get whole
// panels only.
func (cl *chaosClient) boards() bool { return cl.idx%2 == 0 }

// frame applies one frame as the page would, recording every breach of the
// resume contract: a line at or below the cursor, an id twice, a line of
// another game or without its own id in its HTML, a reset; and a board
// frame that keeps a row the socket's panel does not have.
func (cl *chaosClient) frame(addr string, f frame) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch f.T {
	case "state":
		cl.states++
		cl.panel = f.HTML
	case "board":
		cl.boardFrames++
		if !cl.boards() {
			cl.errs.add("client %d (%s) on %s: a board frame, but the socket did not ask for them", cl.idx, cl.game, addr)
		}
		panel, err := boardpatch.Apply(cl.panel, f.HTML)
		if err != nil {
			cl.errs.add("client %d (%s) on %s: board frame after seq %d: %v", cl.idx, cl.game, addr, cl.cursor, err)
		}
		cl.panel = panel
	case "reset":
		cl.resets++
		if !cl.lost.Load() {
			cl.errs.add("client %d (%s) on %s: reset frame at cursor %d, the store was not lost", cl.idx, cl.game, addr, cl.cursor)
		}
		cl.store = "" // the page reloads
	case "line":
		cl.lines++
		if f.Seq <= cl.cursor {
			cl.doubled++
			cl.errs.add("client %d (%s) on %s: line seq %d (%s) not after cursor %d", cl.idx, cl.game, addr, f.Seq, f.ID, cl.cursor)
		} else {
			cl.cursor = f.Seq
		}
		if seq, ok := cl.seen[f.ID]; ok {
			if f.Seq > seq {
				cl.doubled++ // else counted as not after the cursor
			}
			cl.errs.add("client %d (%s) on %s: %s received twice (seq %d, then %d)", cl.idx, cl.game, addr, f.ID, seq, f.Seq)
			return
		}
		if !strings.Contains(f.HTML, `id="`+f.ID+`"`) {
			cl.errs.add("client %d (%s): line %s: html does not carry its id: %.200s", cl.idx, cl.game, f.ID, f.HTML)
		}
		cl.seen[f.ID] = f.Seq
	case "watching":
		// The viewer count (docs/live-page.md): not part of the timeline.
	default:
		cl.errs.add("client %d (%s): unknown frame type %q", cl.idx, cl.game, f.T)
	}
}

// pageItem matches a timeline item of the game page or an older-lines
// fragment: <li id="evt_…" data-seq="N" …>.
var pageItem = regexp.MustCompile(`<li id="(evt_[^"]+)" data-seq="(\d+)"`)

// pageGame matches the page's <section id="game" …> tag.
var pageGame = regexp.MustCompile(`<section [^>]*id="game"[^>]*>`)

// reload loads the game page from addr as a browser does after a reset (or
// at first): its store id and seq, and every line at or below that seq,
// from the page and then the older-lines fragments. The timeline starts
// over from what it shows; lines stored since come by the websocket.
func (cl *chaosClient) reload(ctx context.Context, hc *http.Client, addr string) (int64, string, error) {
	body, _, err := httpGet(ctx, hc, fmt.Sprintf("http://%s/games/%s", addr, cl.game))
	if err != nil {
		return 0, "", err
	}
	tag := pageGame.FindString(body)
	seqs, store := attr(tag, "data-seq"), attr(tag, "data-store")
	seq, err := strconv.ParseInt(seqs, 10, 64)
	if err != nil || store == "" {
		return 0, "", fmt.Errorf("game page without data-seq or data-store: %.200q", tag)
	}
	seen := map[string]int64{}
	// The page and its older-lines fragments show the lines newest first:
	// each id must be older (by EVT id) than every one shown above it. A
	// line out of place or shown twice is a breach, not just a set that
	// happens to be whole (seen, a map, would hide both).
	var prev, where string
	take := func(html string) (oldest string, n int) {
		for _, m := range pageItem.FindAllStringSubmatch(html, -1) {
			if prev != "" && m[1] >= prev {
				cl.errs.add("client %d (%s) on %s: %s: line %s shown below %s, not older than it (the page shows newest first, in EVT-id order)",
					cl.idx, cl.game, addr, where, m[1], prev)
			}
			prev = m[1]
			s, _ := strconv.ParseInt(m[2], 10, 64)
			if s <= seq { // later ones come by the websocket
				seen[m[1]] = s
			}
			oldest, n = m[1], n+1
		}
		return oldest, n
	}
	where = "game page"
	before, n := take(body)
	for more := n > 0 && strings.Contains(body, `id="older"`); more; {
		frag, hdr, err := httpGet(ctx, hc, fmt.Sprintf("http://%s/games/%s/older?before=%s", addr, cl.game, before))
		if err != nil {
			return 0, "", err
		}
		where = "older lines before " + before
		var k int
		if before, k = take(frag); k == 0 {
			break
		}
		more = hdr.Get("X-More") == "true"
	}
	cl.mu.Lock()
	cl.seen, cl.cursor, cl.store = seen, seq, store
	cl.reloads++
	cl.mu.Unlock()
	return seq, store, nil
}

// httpGet returns a 200 answer's body and header.
func httpGet(ctx context.Context, hc *http.Client, url string) (string, http.Header, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return "", nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return string(b), resp.Header, nil
}

// attr returns the value of name="…" in an HTML tag.
func attr(tag, name string) string {
	i := strings.Index(tag, " "+name+`="`)
	if i < 0 {
		return ""
	}
	rest := tag[i+len(name)+3:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// lagging describes the clients that do not show as many lines as the
// store holds for their game; empty when none.
func (cs *chaosClients) lagging(st storeView) string {
	var out []string
	for _, cl := range cs.all {
		cl.mu.Lock()
		n := len(cl.seen)
		cl.mu.Unlock()
		if want := len(st.ids[cl.game]); n != want {
			out = append(out, fmt.Sprintf("client %d (%s) has %d of %d", cl.idx, cl.game, n, want))
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("… %d clients lag", len(out)))
	}
	return strings.Join(out, "; ")
}

// check compares each client's assembled timeline (its ids in EVT-id
// order, as the page inserts them) with the store's for its game.
func (cs *chaosClients) check(t *testing.T, st storeView) (lost, doubled int) {
	t.Helper()
	cs.errs.report(t, "live clients")
	for _, cl := range cs.all {
		cl.mu.Lock()
		got := make([]string, 0, len(cl.seen))
		for id := range cl.seen {
			got = append(got, id)
		}
		doubled += cl.doubled
		cl.mu.Unlock()
		sort.Strings(got)
		want := st.ids[cl.game]
		if equal(got, want) {
			continue
		}
		missing, extra := diff(want, got)
		lost += len(missing)
		t.Errorf("client %d (%s): timeline of %d lines differs from the store's %d: missing %s, not stored %s",
			cl.idx, cl.game, len(got), len(want), describe(missing), describe(extra))
	}
	return lost, doubled
}

// figures sums the clients' counters for the log.
func (cs *chaosClients) figures() string {
	var conns, streams, drops, fails, lines, states, boards, resets, reloads int
	for _, cl := range cs.all {
		cl.mu.Lock()
		conns, drops, fails, lines, states, boards = conns+cl.conns, drops+cl.drops, fails+cl.dialFails, lines+cl.lines, states+cl.states, boards+cl.boardFrames
		resets, reloads, streams = resets+cl.resets, reloads+cl.reloads, streams+cl.streamConns
		cl.mu.Unlock()
	}
	return fmt.Sprintf("%d clients, %d connections (%d of them event streams), %d drops, %d refused dials, %d line frames, %d state frames, %d board frames, %d resets, %d page loads",
		len(cs.all), conns, streams, drops, fails, lines, states, boards, resets, reloads)
}

// diff returns the elements of sorted want missing from sorted got, and
// those of got not in want.
func diff(want, got []string) (missing, extra []string) {
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			extra = append(extra, got[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return missing, extra
}

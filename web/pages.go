package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/untrusted"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// readTimeout bounds the store reads of one page request. A variable for
// the tests alone (SetReadTimeout).
var readTimeout = 10 * time.Second

// readRetryAfter is the Retry-After, in seconds, of a request whose reads
// ran out of readTimeout.
const readRetryAfter = 5

// render writes a component as a complete response, or a 500 if it fails
// before the first byte (it is rendered into a buffer first).
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, c templ.Component) {
	var b bytes.Buffer
	if err := c.Render(r.Context(), &b); err != nil {
		s.fail(w, r, "render", err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	revalidate(w.Header())
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

// fail answers a request whose store read or rendering failed, and logs
// it: at most one line per what (a constant of the caller's) every
// refusalLogEvery, with the count held back, since any client can repeat a
// request at will and a failing disk fails them all; until 6 Dec 2026 each
// request wrote its ERROR line (TestStoreFailureLogSampled).
//
// A read that ran out of readTimeout (a store slowed down, a lock held
// outside the renderers) is a 503 with Retry-After: the server is too busy
// for now, and the same request may pass in a moment. Every other failure
// is a 500, a fault not known to pass by itself. Until 6 Dec 2026 a
// timeout was a 500 too (TestStoreReadTimeoutIs503).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	if ok, skipped := s.sampled.Allow("fail: " + what); ok {
		s.log.Error("web: "+what, untrusted.Attr("path", r.URL.Path), untrusted.Err(err), "similar_unlogged", skipped)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		w.Header().Set("Retry-After", strconv.Itoa(readRetryAfter))
		http.Error(w, "the store did not answer in time: try again", http.StatusServiceUnavailable)
		return
	}
	http.Error(w, "internal error", http.StatusInternalServerError)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusNotFound, templates.ErrorPage(http.StatusNotFound, "Not found"))
}

// game returns the {game} URL parameter, answering 404 itself when it is
// not a valid game name.
func (s *Server) game(w http.ResponseWriter, r *http.Request) (string, bool) {
	g := chi.URLParam(r, "game")
	if !event.ValidGame(g) {
		s.notFound(w, r)
		return "", false
	}
	return g, true
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	games, more, err := s.indexGames(ctx)
	if err != nil {
		s.fail(w, r, "games", err)
		return
	}
	s.render(w, r, http.StatusOK, templates.IndexPage(games, more, time.Now(), s.Watching()))
}

// indexGames returns the games the index lists and how many it leaves out.
func (s *Server) indexGames(ctx context.Context) ([]store.Game, int, error) {
	games, total, err := s.recent.get(ctx, s.cfg.Store)
	return games, max(total-len(games), 0), err
}

// gamesFragment is the index's table body, polled by the page script.
func (s *Server) gamesFragment(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	games, more, err := s.indexGames(ctx)
	if err != nil {
		s.fail(w, r, "games", err)
		return
	}
	s.render(w, r, http.StatusOK, templates.GamesRows(games, more, time.Now(), s.Watching()))
}

func (s *Server) gamePage(w http.ResponseWriter, r *http.Request) {
	game, ok := s.game(w, r)
	if !ok {
		return
	}
	if r.URL.Query().Has("before") {
		s.olderPage(w, r, game)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	// One line more than the page tells whether an older one exists: a
	// game of exactly one page offers no "older lines".
	p, err := s.cfg.Store.Page(ctx, game, s.cfg.PageLines+1)
	if err != nil {
		s.fail(w, r, "page", err)
		return
	}
	if p.Board.Game.Name == "" {
		p.Board.Game.Name = game
	}
	var more bool
	p.Lines, more = s.page(p.Lines)
	v := templates.GameView{Name: game, Seq: p.Seq, Last: p.Last, Board: p.Board, Items: items(p.Lines), StoreID: s.cfg.StoreID,
		Watching: s.watchingOf(game), Cap: s.cfg.DOMLines, UpgradeMs: s.cfg.UpgradeRetry.Milliseconds(),
		QuietMs: s.cfg.QuietProbe.Milliseconds(), More: more}
	if n := len(p.Lines); n > 0 {
		v.OldestID = p.Lines[n-1].EvtID
	}
	s.render(w, r, http.StatusOK, templates.GamePage(v))
}

func items(lines []store.Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = lineItem(l)
	}
	return out
}

// older serves the lines before ?before=EVT_ID as an HTML fragment of <li>
// items, newest first; X-More says whether to offer another page. A game
// the store does not know is a 404, as its page of the same lines
// (olderPage) is; a known game paged past its oldest line is an empty
// fragment.
func (s *Server) older(w http.ResponseWriter, r *http.Request) {
	game, ok := s.game(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	lines, more, ok := s.olderLines(ctx, w, r, game, "older")
	if !ok {
		return
	}
	// A line before the cursor is proof enough that the store knows the
	// game; only an empty page asks it.
	if len(lines) == 0 {
		if _, ok := s.storedGame(ctx, w, r, game); !ok {
			return
		}
	}
	var b bytes.Buffer
	for _, it := range items(lines) {
		b.WriteString(it)
		b.WriteByte('\n')
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-More", strconv.FormatBool(more))
	revalidate(h) // a late line can still land below the cursor
	w.Write(b.Bytes())
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	game, ok := s.game(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	g, ok := s.storedGame(ctx, w, r, game)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, templates.ReplayPage(g))
}

// storedGame reads game from the store for a page about it; a game the
// store does not have is a 404. It reports whether it answered the request.
func (s *Server) storedGame(ctx context.Context, w http.ResponseWriter, r *http.Request, game string) (store.Game, bool) {
	g, err := s.cfg.Store.Game(ctx, game)
	if errors.Is(err, store.ErrNotFound) {
		s.notFound(w, r)
		return g, false
	}
	if err != nil {
		s.fail(w, r, "game", err)
		return g, false
	}
	return g, true
}

// TimelineEntry is one line of /games/{game}/timeline.json, the replay
// page's input.
type TimelineEntry struct {
	Seq  int64     `json:"seq"`
	ID   string    `json:"id"`
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`   // writer's clock; zero when unknown
	HTML string    `json:"html"` // the wrapped <li> line
}

// TimelinePage is one response of /games/{game}/timeline.json?after=EVT_ID:
// the entries after the cursor in EVT id order, and the cursor of the next
// page when there may be more; or of ?since=SEQ: the game's lines with a
// higher seq, in seq order (what was committed since, late lines with old
// EVT ids included). Seq is where a later ?since= goes on from: for an
// after= page the store's highest seq read before the page (every line at
// or below it is in this page or a later one), for a since= page the last
// entry's seq. Store names the store the seqs belong to. timelineJSON
// writes it entry by entry.
type TimelinePage struct {
	Entries []TimelineEntry `json:"entries"`
	Next    string          `json:"next,omitempty"`
	Seq     int64           `json:"seq"`
	Store   string          `json:"store,omitempty"`
}

// timelineJSON serves the replay data a page at a time: at most
// TimelineLines entries and, past the first entry, TimelineBytes of JSON.
// A whole 30,000-line game in one response would cost the server its size
// in memory per request. A game the store does not know is a 404 on every
// form (after=, since=, neither), as its replay page and /older are; a
// known game past its last line is a page of no entries.
func (s *Server) timelineJSON(w http.ResponseWriter, r *http.Request) {
	game, ok := s.game(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	after := q.Get("after")
	if after != "" && !event.ValidID(after) {
		http.Error(w, "after: want an EVT id", http.StatusBadRequest)
		return
	}
	since, bySeq := int64(0), q.Has("since")
	if bySeq {
		var err error
		if since, err = parseCursor(q.Get("since"), "since"); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if after != "" {
			http.Error(w, "since: not with after", http.StatusBadRequest)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	var (
		lines []store.Line
		seq   int64
		err   error
	)
	if bySeq {
		// A replay loaded earlier asks what was committed since: a late
		// line (an older EVT id, committed after the page that would have
		// held it was read) reaches it only this way.
		seq = since
		lines, err = s.cfg.Store.After(ctx, game, since, s.cfg.TimelineLines)
	} else {
		// Read before the page: a line committed after this read has a
		// higher seq, so the replay that goes on from it with since= misses
		// none, whichever page its EVT id falls in.
		if seq, err = s.cfg.Store.MaxSeq(ctx); err == nil {
			// One line more than a page tells whether another follows:
			// a full last page carries no next (docs/contracts.md).
			lines, err = s.cfg.Store.TimelineAfter(ctx, game, after, s.cfg.TimelineLines+1)
		}
	}
	if err != nil {
		s.fail(w, r, "timeline", err)
		return
	}
	// A game the store does not know is a 404, as for /older: a replay
	// open on a game deleted since (feedctl prune) learns that it is gone
	// instead of polling an empty timeline for ever. A line is proof
	// enough that the store knows the game; only an empty page asks.
	if len(lines) == 0 {
		if _, ok := s.storedGame(ctx, w, r, game); !ok {
			return
		}
	}
	more := len(lines) > s.cfg.TimelineLines
	if more {
		lines = lines[:s.cfg.TimelineLines]
	}
	// Each entry is encoded as it is taken, and the bound is on the bytes
	// it took: an estimate from its HTML missed what JSON escapes (a
	// control character in a chat takes six bytes, one in the HTML).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString(`{"entries":[`)
	n, size, next := 0, 0, ""
	for _, l := range lines {
		at := b.Len()
		if n > 0 {
			b.WriteByte(',')
		}
		e := TimelineEntry{Seq: l.Seq, ID: l.EvtID, Kind: l.Kind, At: l.At, HTML: lineItem(l)}
		if err := enc.Encode(e); err != nil {
			s.fail(w, r, "timeline", err)
			return
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		if size > 0 && size+b.Len()-at > s.cfg.TimelineBytes {
			b.Truncate(at)
			break
		}
		size += b.Len() - at
		n++
		next = l.EvtID
		if bySeq {
			seq = l.Seq
		}
	}
	b.WriteByte(']')
	if !bySeq && (n < len(lines) || more) {
		b.WriteString(`,"next":`)
		enc.Encode(next) // an EVT id: nothing to escape, no error
		b.Truncate(b.Len() - 1)
	}
	b.WriteString(`,"seq":`)
	b.WriteString(strconv.FormatInt(seq, 10))
	if s.cfg.StoreID != "" {
		b.WriteString(`,"store":`)
		enc.Encode(s.cfg.StoreID)
		b.Truncate(b.Len() - 1)
	}
	b.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	revalidate(w.Header())
	w.Write(b.Bytes())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	revalidate(w.Header())
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

// revalidate marks a generated response as one to check again before each
// use (no-cache), unless a middleware already said more: the admin guard's
// no-store must stand, or an admin page, token URL and all, would be kept
// in the browser's cache.
func revalidate(h http.Header) {
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
}

package web

import (
	"context"
	"net/http"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// olderPage serves /games/{game}?before=EVT_ID, the "older lines" link's
// target: a page of the lines before the EVT id, newest first, with a link
// to the page before it. The live page's script takes the link's click and
// fetches the same lines as a fragment (older); this page is what a new
// tab, a bookmark or a browser without the script gets, where the link led
// to that bare fragment.
func (s *Server) olderPage(w http.ResponseWriter, r *http.Request, game string) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	lines, more, ok := s.olderLines(ctx, w, r, game, "older page")
	if !ok {
		return
	}
	g, ok := s.storedGame(ctx, w, r, game)
	if !ok {
		return
	}
	v := templates.OlderView{Game: g, Items: items(lines)}
	if more {
		v.Next = lines[len(lines)-1].EvtID
	}
	s.render(w, r, http.StatusOK, templates.OlderPage(v))
}

// olderLines reads, for older and olderPage, the page of game's lines
// before the request's ?before= EVT id, newest first, and whether a page
// before it exists (one line more than a page is read to tell: a full
// last page linked to a page with no lines). When ok is false it has answered the request itself (a 400 for a
// cursor that is not an EVT id, or the store's failure as what).
func (s *Server) olderLines(ctx context.Context, w http.ResponseWriter, r *http.Request, game, what string) (lines []store.Line, more, ok bool) {
	before := r.URL.Query().Get("before")
	if !event.ValidID(before) {
		http.Error(w, "before: want an EVT id", http.StatusBadRequest)
		return nil, false, false
	}
	lines, err := s.cfg.Store.Before(ctx, game, before, s.cfg.PageLines+1)
	if err != nil {
		s.fail(w, r, what, err)
		return nil, false, false
	}
	lines, more = s.page(lines)
	return lines, more, true
}

// page cuts lines, read with one line more than a page (PageLines+1), to
// a page, and reports whether that line was there: older lines exist.
func (s *Server) page(lines []store.Line) ([]store.Line, bool) {
	if len(lines) > s.cfg.PageLines {
		return lines[:s.cfg.PageLines], true
	}
	return lines, false
}

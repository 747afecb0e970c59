package web

import (
	"context"
	"net/http"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/templates"
)

// olderPage serves /games/{game}?before=EVT_ID, the "older lines" link's
// target: a page of the lines before the EVT id, newest first, with a link
// to the page before it. The live page's script takes the link's click and
// fetches the same lines as a fragment (older); this page is what a new
// tab, a bookmark or a browser without the script gets, where the link led
// to that bare fragment.
func (s *Server) olderPage(w http.ResponseWriter, r *http.Request, game string) {
	before := r.URL.Query().Get("before")
	if !event.ValidID(before) {
		http.Error(w, "before: want an EVT id", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	g, ok := s.storedGame(ctx, w, r, game)
	if !ok {
		return
	}
	lines, err := s.cfg.Store.Before(ctx, game, before, s.cfg.PageLines)
	if err != nil {
		s.fail(w, r, "older page", err)
		return
	}
	v := templates.OlderView{Game: g, Items: items(lines)}
	if n := len(lines); n >= s.cfg.PageLines {
		v.Next = lines[n-1].EvtID
	}
	s.render(w, r, http.StatusOK, templates.OlderPage(v))
}

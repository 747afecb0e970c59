package web

import (
	"context"
	"net/http"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/templates"
)

// statusTimeout bounds one status snapshot (many XINFO calls).
const statusTimeout = 5 * time.Second

// APIStatus is the JSON of /api/status: the consumer group's status plus
// this replica's websocket side.
type APIStatus struct {
	feed.Status
	Error string `json:"error,omitempty"` // the status source failed
	Web   Stats  `json:"web"`
}

func (s *Server) snapshot(ctx context.Context) (feed.Status, error) {
	if s.cfg.Status == nil {
		return feed.Status{At: time.Now().UTC()}, errNoStatus
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	return s.cfg.Status(ctx)
}

func (s *Server) statusView(ctx context.Context) templates.StatusView {
	st, err := s.snapshot(ctx)
	v := templates.StatusView{Status: st, Fragment: "/fragments/status"}
	if err != nil {
		v.Err = err.Error()
	}
	return v
}

func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, templates.StatusPage(s.statusView(r.Context())))
}

// statusFragment is the status page's content, polled by status.js. A
// failed status source is shown in it, as on the page, not answered as an
// HTTP error: the script keeps polling either way.
func (s *Server) statusFragment(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, templates.StatusBody(s.statusView(r.Context())))
}

func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.snapshot(r.Context())
	out := APIStatus{Status: st, Web: s.Stats()}
	code := http.StatusOK
	if err != nil {
		out.Error = err.Error()
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, out)
}

// healthz answers 200 while the process serves. Never kept by a cache, as
// /readyz: a probe through a proxy or a CDN must see this process's answer,
// not one kept from before it died (TestProbesNotCached).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) { writeHealthy(w) }

// writeHealthy is the answer of /healthz, from the Server and from
// Starting alike.
func writeHealthy(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte("ok\n"))
}

// readyz answers 200 when cfg.Ready passes (Redis and SQLite reachable, the
// consumer loop running) and the server is not draining (see Drain), else
// 503 "not ready". The reason names internal addresses and errors, so only
// an admin request (see isAdmin) gets it. Probes share checks (see
// readiness): a result may be up to readyMaxAge old.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var err error
	switch {
	case s.draining.Load():
		// Ahead of the shared check, whose result may be readyMaxAge
		// old: a balancer's first probe after Drain must see it.
		err = errDraining
	case s.ready != nil:
		err = s.ready.get(r.Context())
	}
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		if s.isAdmin(r) {
			w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		w.Write([]byte("not ready\n"))
		return
	}
	w.Write([]byte("ready\n"))
}

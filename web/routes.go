package web

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/codemojex/feed/static"
)

// csp forbids inline script and every origin but this server's: stored
// lines carry untrusted text, and the escaping is backed by the browser.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// maxBody caps request bodies; no endpoint takes one, so this only bounds
// what a client can make the server read.
const maxBody = 4 << 10

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer, middleware.GetHead, securityHeaders, limitBody)
	r.NotFound(s.notFound)

	r.Get("/", s.index)
	r.Get("/fragments/games", s.gamesFragment)
	r.Get("/games/{game}", s.gamePage)
	r.Get("/games/{game}/older", s.older)
	r.Get("/games/{game}/live", s.live)
	r.Get("/games/{game}/replay", s.replay)
	r.Get("/games/{game}/timeline.json", s.timelineJSON)
	r.Get(static.Prefix+"{file}", s.static)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)

	r.Group(func(r chi.Router) {
		r.Use(s.admin)
		r.Get("/status", s.statusPage)
		r.Get("/fragments/status", s.statusFragment)
		r.Get("/api/status", s.apiStatus)
		r.Handle("/metrics", promhttp.Handler())
	})
	return r
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		next.ServeHTTP(w, r)
	})
}

func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBody {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		next.ServeHTTP(w, r)
	})
}

// admin guards operator endpoints with AdminToken when one is set: an
// "Authorization: Bearer TOKEN" header or a ?token=TOKEN query (so a
// browser can open /status from a link).
func (s *Server) admin(next http.Handler) http.Handler {
	want := []byte(s.cfg.AdminToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(want) > 0 {
			got := r.URL.Query().Get("token")
			if a := r.Header.Get("Authorization"); a != "" {
				got, _ = strings.CutPrefix(a, "Bearer ")
			}
			if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="codemojex feed"`)
				http.Error(w, "admin token required", http.StatusUnauthorized)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// static serves an embedded asset by its content-hashed name, cached for a
// year: a new build has new names.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	a, ok := static.Lookup(chi.URLParam(r, "file"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Write(a.Body)
}

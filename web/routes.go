package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
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

// compressible are the content types of the public responses that are sent
// gzipped when the client accepts it.
var compressible = []string{"text/html", "text/css", "text/javascript", "application/javascript", "application/json", "image/svg+xml"}

// maxBody caps request bodies; no endpoint takes one, so this only bounds
// what a client can make the server read.
const maxBody = 4 << 10

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer, middleware.GetHead, securityHeaders, limitBody)
	r.MethodNotAllowed(methodNotAllowed)

	// Websockets and event streams have their own limits (rate, per-client
	// and global caps, taken before the handshake) and no write deadline
	// but per frame.
	r.With(getOnly, s.requirePublicHost).Get("/games/{game}/live", s.live) // livePattern
	r.With(s.requirePublicHost).Get("/games/{game}/events", s.events)
	// Liveness and readiness answer whatever else their address has in
	// flight: a probe shares its address with the traffic it watches (a
	// load balancer, a node, every client without -trusted-proxies), and a
	// cap that refused it under load would have a live replica restarted
	// or a serving one taken out of rotation. Liveness costs nothing;
	// readiness probes share one check (see readiness).
	r.With(s.writeDeadline).Get("/healthz", s.healthz)
	r.With(s.writeDeadline).Get("/readyz", s.readyz)

	r.Group(func(r chi.Router) {
		r.Use(s.writeDeadline, s.limitRequests)
		r.NotFound(s.notFound)
		r.Group(func(r chi.Router) {
			// Pages, fragments, replay data and assets go gzipped to
			// clients that take it: lines repeat their markup, so a page
			// shrinks several times over (docs/operations.md). Not the
			// operator's pages: they may carry the admin token beside text
			// from the streams, which a BREACH-style attack could guess by
			// the compressed size. Nor the websocket or the event stream
			// (routes above): a stream must not wait in a compressor.
			r.Use(gzipOnly, middleware.Compress(5, compressible...))
			r.Get("/", s.index)
			r.Get("/fragments/games", s.gamesFragment)
			r.Get("/games/{game}", s.gamePage)
			r.Get("/games/{game}/older", s.older)
			r.Get("/games/{game}/replay", s.replay)
			r.Get("/games/{game}/timeline.json", s.timelineJSON)
			// Any path below the prefix, so that a miss deeper down
			// (/static/a/b) is the static miss, no-store, not a page's.
			r.Get(static.Prefix+"*", s.static)
		})

		r.Group(func(r chi.Router) {
			r.Use(s.requirePublicHost, s.admin)
			r.Get("/status", s.statusPage)
			r.Get("/fragments/status", s.statusFragment)
			r.Get("/api/status", s.apiStatus)
			r.Handle("/metrics", promhttp.Handler())
			// Profiles and execution traces of the running process: what
			// docs/benchmarks.md reads a missed figure with. Their
			// durations fit the response deadline (within).
			for path, h := range s.profileRoutes() {
				r.HandleFunc(path, h)
			}
		})
	})
	return r
}

// livePattern is the route of the websocket handshake, which is a GET
// and nothing else (RFC 6455, 4.1): the one route that does not answer
// HEAD (getOnly). routes spells it out, as e2e's TestREADMEEndpoints reads
// the routes there; TestLiveAllowsGetAlone fails if the two part.
const livePattern = "/games/{game}/live"

// getOnly answers every method but GET 405 with Allow: GET, before
// anything else of the request is judged: GetHead hands a HEAD to the GET
// route, and a HEAD is no handshake, whatever its fields. Until 6 Dec
// 2026 a HEAD with the handshake's fields was a 405 saying Allow: GET and
// one without them a 426, while another method's 405 said Allow: GET,
// HEAD (TestLiveAllowsGetAlone).
func getOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			mUpgradesRejected.WithLabelValues("handshake").Inc()
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "websocket: the handshake must be a GET", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowable are the methods a 405's Allow may name.
var allowable = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// methodNotAllowed answers a method that no route of the path takes: a 405
// whose Allow names every method the path serves (RFC 9110, section
// 15.5.6), HEAD with GET, which GetHead serves as GET, but on livePattern,
// which refuses it (getOnly). chi's own 405 named the routes' methods
// alone, "Allow: GET" (TestMethodNotAllowedNamesHead).
func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	rctx := chi.RouteContext(r.Context())
	path := rctx.RoutePath
	if path == "" {
		if path = r.URL.RawPath; path == "" {
			path = r.URL.Path
		}
	}
	serves := func(m string) bool { return rctx.Routes.Match(chi.NewRouteContext(), m, path) }
	headAsGet := rctx.Routes.Find(chi.NewRouteContext(), http.MethodGet, path) != livePattern
	var allow []string
	for _, m := range allowable {
		if serves(m) || m == http.MethodHead && headAsGet && serves(http.MethodGet) {
			allow = append(allow, m)
		}
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
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

// gzipOnly hands middleware.Compress the client's Accept-Encoding as gzip
// or nothing: gzip is the one coding sent, and only to a client whose
// header takes it with a q-value above 0 (RFC 9110, section 12.5.3).
// Compress matches coding names as substrings and ignores q-values, so
// "gzip;q=0", gzip refused, was answered gzipped, and a client naming only
// deflate got raw DEFLATE, which "deflate" (zlib's format) does not name.
// A plain answer says Vary too (Compress adds it only when it compresses):
// else a shared cache that kept a plain asset would serve it plain to every
// browser for the year it is fresh.
func gzipOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			r.Header.Set("Accept-Encoding", "gzip")
		} else {
			r.Header.Del("Accept-Encoding")
			w.Header().Add("Vary", "Accept-Encoding")
		}
		next.ServeHTTP(w, r)
	})
}

// acceptsGzip reports whether Accept-Encoding values name gzip (or its
// alias x-gzip) with a q-value above 0. A malformed q-value refuses: an
// uncompressed response is always understood.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, coding := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(coding, ";")
			if name = strings.TrimSpace(name); !strings.EqualFold(name, "gzip") && !strings.EqualFold(name, "x-gzip") {
				continue
			}
			for _, p := range strings.Split(params, ";") {
				k, q, _ := strings.Cut(p, "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
					return err == nil && f > 0
				}
			}
			return true
		}
	}
	return false
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

// admin guards operator endpoints: with an AdminToken, a request must carry
// it; without one the server listens on loopback only (Open sees to it).
func (s *Server) admin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.isAdmin(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codemojex feed"`)
			http.Error(w, "admin token required: Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		// The page's URL may carry ?token=: keep it out of Referer headers.
		w.Header().Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// isAdmin reports whether r may see operator details: a public Host and,
// when an AdminToken is set, that token, from "Authorization: Bearer TOKEN"
// (the scheme is required, in any case) or from ?token=TOKEN (so a browser
// can open /status from a link; status.js then drops it from the address
// bar). A malformed Authorization header is refused even when the query
// has the right token: a request says one thing.
func (s *Server) isAdmin(r *http.Request) bool {
	if !s.publicHost(r) {
		return false
	}
	want := s.cfg.AdminToken
	if want == "" {
		// Open to local operators only: not to a client a trusted proxy
		// (on this host, in front of the loopback listener) forwarded.
		return s.loopback && s.clientIP(r).IsLoopback()
	}
	got, ok := r.URL.Query().Get("token"), true
	if a := r.Header.Get("Authorization"); a != "" {
		got, ok = bearer(a)
	}
	// Digests of equal length: ConstantTimeCompare answers at once when
	// the lengths differ, which would time the token's length.
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return ok && subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// bearer parses an Authorization header of the Bearer scheme (RFC 6750;
// the scheme name is case-insensitive, RFC 9110 section 11.1).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// static serves an embedded asset by its content-hashed name, cached for a
// year: a new build has new names. A name it lacks is 404 no-store, never
// kept: mid-deploy, a page of a newer build served by another replica asks
// this one for its assets, and a cached 404 (caches may keep a 404 without
// Cache-Control by heuristics, CDNs do) would outlive the deploy.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	a, ok := static.Lookup(chi.URLParam(r, "*"))
	if !ok {
		w.Header().Set("Cache-Control", "no-store")
		s.notFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Write(a.Body)
}

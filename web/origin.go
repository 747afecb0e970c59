package web

import (
	"net/http"
	"net/url"
	"path"
	"strings"
)

// originAllowed is the Origin check of websockets and event streams, with
// the rules the std engine gets from coder/websocket's OriginPatterns, so
// that AllowedOrigins means the same on both engines: a request without
// Origin passes (not a browser, or a same-origin GET) unless the browser
// says it comes from another site; an Origin whose host:port is the
// request's Host (any case) passes; else the Origin must match one of
// patterns, path.Match-style and case-insensitive, against its host:port,
// or against scheme://host:port when the pattern names a scheme.
func originAllowed(r *http.Request, patterns []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		// Another site's <img>, <script> or no-cors fetch of an event
		// stream sends no Origin, but browsers mark it with Fetch
		// Metadata: it would hold a stream open and count as a viewer.
		return r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, p := range patterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, err := path.Match(strings.ToLower(p), strings.ToLower(target)); err == nil && ok {
			return true
		}
	}
	return false
}

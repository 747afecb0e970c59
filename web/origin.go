package web

import (
	"net/http"
	"net/url"
	"path"
	"strings"
)

// originAllowed is the Origin check of the nbio engine, with the rules the
// std engine gets from coder/websocket's OriginPatterns, so that
// AllowedOrigins means the same on both: a request without Origin (no
// browser) passes; so does an Origin whose host:port is the request's Host
// (any case); else the Origin must match one of patterns, path.Match-style
// and case-insensitive, against its host:port, or against
// scheme://host:port when the pattern names a scheme.
func originAllowed(r *http.Request, patterns []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
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

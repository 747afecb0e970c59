package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// originAllowed is the Origin check of websockets and event streams, on
// both engines (the std engine's handshake skips coder/websocket's own
// check, whose rules differ on default ports): a request without Origin
// passes (not a browser, or a same-origin GET) unless the browser says it
// comes from another site; an Origin whose host:port is the request's Host
// (any case) passes; else the Origin must match one of patterns,
// path.Match-style and case-insensitive, against its host:port, or against
// scheme://host:port when the pattern names a scheme. A port that is its
// scheme's default (80 for http, 443 for https) counts as no port on either
// side: browsers leave it out of the Origin and the Host, while an operator
// may write it in a pattern and a proxy into the Host it passes on. An
// Origin that is not scheme://host[:port] is refused whatever the patterns
// say: "null" (a sandboxed frame, a file:// page) or one with userinfo, a
// path or a query, which no browser sends.
func originAllowed(r *http.Request, patterns []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		// Another site's <img>, <script> or no-cors fetch of an event
		// stream sends no Origin, but browsers mark it with Fetch
		// Metadata: it would hold a stream open and count as a viewer.
		return r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	u, err := url.Parse(origin)
	if err != nil || !serializedOrigin(u) {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	host, port, _ := splitHostPort(u.Host)
	def := defaultPort(u.Scheme)
	if def != "" && (port == "" || port == def) {
		// The request's Host does not say its scheme (TLS ends at the
		// proxy), so either default port in it, or none, is the Origin's.
		rhost, rport, _ := splitHostPort(r.Host)
		if strings.EqualFold(host, rhost) && (rport == "" || rport == def) {
			return true
		}
	}
	targets := []string{u.Host}
	switch {
	case def == "":
	case port == "":
		targets = append(targets, net.JoinHostPort(host, def))
	case port == def:
		targets = append(targets, hostOnly(host))
	}
	for _, p := range patterns {
		p = strings.ToLower(p)
		for _, target := range targets {
			if strings.Contains(p, "://") {
				target = u.Scheme + "://" + target
			}
			if ok, err := path.Match(p, strings.ToLower(target)); err == nil && ok {
				return true
			}
		}
	}
	return false
}

// CheckOriginPatterns reports the first AllowedOrigins pattern no Origin
// can match: originAllowed matches a pattern against host[:port], or
// scheme://host[:port] when it names a scheme, so one with a path (a URL
// copied with its trailing slash), userinfo, a query, or a malformed
// pattern (path.ErrBadPattern) matched nothing, and the origins it was
// meant to allow were refused.
func CheckOriginPatterns(patterns []string) error {
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		hostPart := p
		if _, rest, ok := strings.Cut(p, "://"); ok {
			hostPart = rest
		}
		if hostPart == "" || strings.ContainsAny(hostPart, "/\\@?# \t") {
			return fmt.Errorf("web: allowed origin %q: want a host pattern, [scheme://]host[:port], without a path", p)
		}
		if _, err := path.Match(strings.ToLower(p), ""); err != nil {
			return fmt.Errorf("web: allowed origin %q: %w", p, err)
		}
	}
	return nil
}

// serializedOrigin reports whether u is an origin as browsers serialize it
// (RFC 6454 section 6.1): a scheme and a host, an optional port, nothing
// else. url.Parse takes "http://x@evil.example/path" for host
// evil.example, so the rest of the check would have judged a forged value
// by a part of it.
func serializedOrigin(u *url.URL) bool {
	return u.Scheme != "" && u.Host != "" && u.User == nil && u.Opaque == "" &&
		u.Path == "" && u.RawQuery == "" && !u.ForceQuery && u.Fragment == ""
}

// defaultPort is the port a URL of scheme means when it names none ("" for
// a scheme without one).
func defaultPort(scheme string) string {
	switch strings.ToLower(scheme) {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	}
	return ""
}

// isDefaultPort reports whether port is a default port of a scheme a page
// is served by: where the scheme is not known, as in a Host header, no port
// and this one name the same place.
func isDefaultPort(port string) bool { return port == "80" || port == "443" }

// splitHostPort splits "host", "host:port", "[v6]", "[v6]:port" or a bare
// IPv6 address into the host (without brackets) and the port ("" when
// there is none). It is the one reader of a host and port: of a Host
// header and of a PublicHosts entry alike (publicHost, parseHostPattern),
// so that what CheckPublicHosts accepts is what a Host is matched against;
// the Origin check and the forwarded hops read theirs with it too. ok
// reports whether hostport is one of those forms: a host that is not
// empty, brackets around an IPv6 address only, and a port, when there is
// one, from 1 to 65535 as a URL writes it (validPort). When it is not,
// host and port are still its nearest reading (without a port: hostport,
// its outer brackets trimmed), which the Origin check and the forwarded
// hops take as they did: they judge the host by other means.
func splitHostPort(hostport string) (host, port string, ok bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
		if strings.Contains(host, ":") {
			ok = isIPv6(host) && (hostport == host || hostport == "["+host+"]")
		} else {
			ok = host != "" && hostport == host
		}
		return host, "", ok
	}
	bracketed := strings.HasPrefix(hostport, "[")
	return host, port, host != "" && validPort(port) && (!bracketed || isIPv6(host))
}

// validPort reports whether port is a TCP port as a URL writes it: decimal
// digits from 1 to 65535, without a sign or a leading zero.
func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == port
}

// isIPv6 reports whether host is an IPv6 address (a zone allowed).
func isIPv6(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is6()
}

// hostOnly is host as it stands in a host:port without the port: an IPv6
// address in brackets.
func hostOnly(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

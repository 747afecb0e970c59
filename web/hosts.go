package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/codemojex/feed/internal/untrusted"
)

// loopbackHosts are public hosts on every server: a browser on the same
// machine reaches it by these names.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// DefaultPublicHosts is the PublicHosts of a server listening on addr: the
// loopback names plus addr's host when it names one (":8080" names none).
func DefaultPublicHosts(addr string) []string {
	out := append([]string(nil), loopbackHosts...)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		out = append(out, host)
	}
	return out
}

// hostPattern is one PublicHosts entry: a host name or address, "*.example.com"
// for its subdomains, with an optional ":port".
type hostPattern struct {
	host string // lower case, no trailing dot; "*.x" matches subdomains of x
	// port "" matches any port; a default port (80, 443) also matches a
	// Host without one, which is how browsers send it behind a TLS proxy.
	port string
}

func parseHostPatterns(list []string) []hostPattern {
	var out []hostPattern
	for _, h := range list {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		host, port := splitHostPort(h)
		out = append(out, hostPattern{host: canonHost(host), port: port})
	}
	return out
}

// CheckPublicHosts reports the first entry of a PublicHosts list that is
// no host pattern: a host name or address ("*.example.com" for its
// subdomains; an IPv6 address with or without brackets) with an optional
// numeric ":port". parseHostPatterns takes anything, and an entry such as
// "https://feed.example.com" or "feed.example.com/" matched no Host ever:
// every request that must carry a public host was refused (421).
func CheckPublicHosts(list []string) error {
	for _, h := range list {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/\\@?# \t") {
			return fmt.Errorf("web: public host %q: want host, host:port or *.domain, not a URL", h)
		}
		host, port := h, ""
		if hp, pp, err := net.SplitHostPort(h); err == nil {
			host, port = hp, pp
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
				return fmt.Errorf("web: public host %q: port %q is not a port number", h, port)
			}
		} else if strings.Contains(h, ":") {
			// A bare IPv6 address, or nothing.
			if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err != nil {
				return fmt.Errorf("web: public host %q: want host, host:port or *.domain", h)
			}
			host = strings.Trim(h, "[]")
		}
		if host == "" || strings.Contains(strings.TrimPrefix(host, "*."), "*") ||
			strings.ContainsAny(strings.Trim(host, "[]"), "[]") {
			return fmt.Errorf("web: public host %q: want host, host:port or *.domain", h)
		}
	}
	return nil
}

func canonHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// publicHost reports whether the request's Host header names this server.
// A page that a DNS-rebinding attacker serves from evil.example and then
// points at this server's address still sends Host: evil.example; only
// names the operator listed (PublicHosts) are believed.
func (s *Server) publicHost(r *http.Request) bool {
	host, port := splitHostPort(r.Host)
	host = canonHost(host)
	if host == "" {
		return false
	}
	for _, p := range s.hosts {
		if p.port != "" && p.port != port && !(port == "" && isDefaultPort(p.port)) {
			continue
		}
		if p.host == host {
			return true
		}
		if sfx, ok := strings.CutPrefix(p.host, "*."); ok && strings.HasSuffix(host, "."+sfx) {
			return true
		}
	}
	return false
}

// requirePublicHost refuses requests whose Host is not a public host: the
// websocket and admin endpoints, where the same-origin check would
// otherwise trust a name the attacker chose.
func (s *Server) requirePublicHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.publicHost(r) {
			mHostsRejected.Inc()
			if ok, skipped := s.sampled.Allow("host"); ok {
				s.log.Info("web: foreign host refused", untrusted.Attr("host", r.Host), untrusted.Attr("path", r.URL.Path),
					"similar_unlogged", skipped)
			}
			http.Error(w, "unknown host: this server answers only to its public hosts", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

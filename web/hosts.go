package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
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

// parseHostPatterns reads a PublicHosts list, blank entries skipped, and
// fails on the first entry that is no host pattern (parseHostPattern).
func parseHostPatterns(list []string) ([]hostPattern, error) {
	var out []hostPattern
	for _, h := range list {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		p, err := parseHostPattern(h)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// parseHostPattern reads one PublicHosts entry as publicHost reads a Host
// header, with splitHostPort and canonHost, and checks what only an entry
// holds: "*." before a domain, and nothing of a URL. An entry such as
// "https://feed.example.com" or "feed.example.com/" would match no Host
// ever: every request that must carry a public host would be refused (421).
func parseHostPattern(h string) (hostPattern, error) {
	if strings.ContainsAny(h, "/\\@?# \t") {
		return hostPattern{}, fmt.Errorf("web: public host %q: want host, host:port or *.domain, not a URL", h)
	}
	host, port, ok := splitHostPort(h)
	if port != "" && !validPort(port) {
		return hostPattern{}, fmt.Errorf("web: public host %q: port %q is not a port number", h, port)
	}
	host = canonHost(host)
	domain, wild := strings.CutPrefix(host, "*.")
	if !ok || strings.Contains(domain, "*") || wild && domain == "" {
		return hostPattern{}, fmt.Errorf("web: public host %q: want host, host:port or *.domain", h)
	}
	return hostPattern{host: host, port: port}, nil
}

// CheckPublicHosts reports the first entry of a PublicHosts list that is
// no host pattern: a host name or address ("*.example.com" for its
// subdomains; an IPv6 address with or without brackets) with an optional
// numeric ":port". Open fails on the same entries: both read them with
// parseHostPattern, and it reads them as publicHost reads a Host header.
func CheckPublicHosts(list []string) error {
	_, err := parseHostPatterns(list)
	return err
}

// canonHost is a host as publicHost compares it: in lower case, without a
// trailing dot, and an IP address in its canonical form (RFC 5952 for
// IPv6), so that "0:0:0:0:0:0:0:1" in PublicHosts names the host a browser
// sends as [::1].
func canonHost(h string) string {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.String()
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// publicHost reports whether the request's Host header names this server.
// A page that a DNS-rebinding attacker serves from evil.example and then
// points at this server's address still sends Host: evil.example; only
// names the operator listed (PublicHosts) are believed.
func (s *Server) publicHost(r *http.Request) bool {
	host, port, ok := splitHostPort(r.Host)
	if !ok {
		return false
	}
	host = canonHost(host)
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

package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParsePrefixes parses a comma-separated list of CIDR prefixes or bare
// addresses (a bare address is its own /32 or /128), as -trusted-proxies
// takes them.
func ParsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("web: trusted proxy %q: %w", f, err)
			}
			// Peers and hops are unmapped to IPv4 before they are looked
			// up, so an IPv4-mapped prefix (::ffff:10.0.0.0/104) is kept as
			// the IPv4 one it names: kept as written, it matched no one,
			// and the proxy it was meant to trust was not.
			if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("web: trusted proxy %q: %w", f, err)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// clientIP is the address of the client a request came from. The peer's
// own address, unless the peer is a trusted proxy: then X-Forwarded-For is
// read from the right, skipping trusted proxies, and the first address not
// among them is the client (entries left of it were written by the client
// itself and prove nothing). Without trusted proxies the header is ignored:
// anyone can send it.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer := peerAddr(r)
	if !s.trusted(peer) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := hopAddr(parts[j])
			if err != nil {
				// A garbled hop: what lies left of it cannot be trusted
				// either, so the last proxy stands for the client.
				return peer
			}
			a = a.Unmap()
			if !s.trusted(a) {
				return a
			}
			peer = a
		}
	}
	return peer
}

// hopAddr parses one X-Forwarded-For entry: an address, or an address with
// its port ("203.0.113.5:51234", "[2001:db8::1]:443") or an IPv6 address in
// brackets, as some proxies (Azure's, IIS's ARR) write them. Read as plain
// addresses only, such hops were garbled, and every client behind those
// proxies shared the proxy's limits.
func hopAddr(hop string) (netip.Addr, error) {
	host, _, _ := splitHostPort(strings.TrimSpace(hop))
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("web: forwarded hop %q is no address", hop)
	}
	return a, nil
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// clientKey is the bucket a client's limits are counted in: its IPv4
// address, or its IPv6 /64 (one subscriber usually holds a whole /64, and
// a per-address limit on IPv6 would be no limit at all).
func (s *Server) clientKey(r *http.Request) string {
	return addrKey(s.clientIP(r))
}

func addrKey(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

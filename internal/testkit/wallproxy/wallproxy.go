// Package wallproxy is an HTTP reverse proxy for tests that stands where a
// corporate proxy does: it refuses websocket upgrades (403), or lets them
// hang unanswered, and relays every other request, event streams included,
// to one server.
package wallproxy

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Proxy is a running wall proxy; Start returns one, closed when the test
// ends.
type Proxy struct {
	srv *http.Server
	ln  net.Listener

	mu      sync.Mutex
	kills   []context.CancelFunc
	refused int
	open    bool // websockets pass
	hold    bool // websocket upgrades hang, unanswered, until the client goes
	held    int  // upgrades hanging now
}

// Start listens on a free loopback port and relays to target (an
// "http://host:port" URL). A target that is down answers 502.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln}
	quiet := log.New(io.Discard, "", 0) // a target that is down is part of the tests
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = quiet
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve(rp)), ErrorLog: quiet}
	go p.srv.Serve(ln)
	tb.Cleanup(func() { p.srv.Close() })
	return p
}

func (p *Proxy) serve(rp *httputil.ReverseProxy) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			p.mu.Lock()
			open, hold := p.open, p.hold
			if !open && !hold {
				p.refused++
			}
			if !open && hold {
				p.held++
			}
			p.mu.Unlock()
			if !open && hold {
				// The server's context ends when the client closes the
				// connection (or the proxy closes).
				<-r.Context().Done()
				p.mu.Lock()
				p.held--
				p.mu.Unlock()
				return
			}
			if !open {
				http.Error(w, "websockets are not allowed by policy", http.StatusForbidden)
				return
			}
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		p.mu.Lock()
		p.kills = append(p.kills, cancel)
		p.mu.Unlock()
		rp.ServeHTTP(w, r.WithContext(ctx))
	}
}

// URL returns the proxy's URL for path.
func (p *Proxy) URL(path string) string { return "http://" + p.ln.Addr().String() + path }

// Kill ends every response relayed so far (an event stream among them),
// as a proxy's restart does; the browser sees its connection reset.
func (p *Proxy) Kill() {
	p.mu.Lock()
	kills := p.kills
	p.kills = nil
	p.mu.Unlock()
	for _, k := range kills {
		k()
	}
}

// LetThrough lets websockets pass from now on.
func (p *Proxy) LetThrough() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = true
}

// Hold has websocket upgrades hang from now on, unanswered, as some proxies
// do, until the client closes its connection.
func (p *Proxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = true
}

// Held returns how many websocket upgrades hang now: how many sockets the
// browser still has open through the proxy, waiting for an answer.
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Refused returns how many websocket upgrades the proxy refused.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}
